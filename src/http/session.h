// Internal to the HTTP library: the server's per-connection Session, its
// ResponseWriter and the state shared with the acceptor (ServerCore).
//
// A Session reads one request at a time with Beast's request_parser (body_limit from
// ServerOptions), dispatches it to a handler and, while the response is in flight, keeps
// one async_read_some on the socket ("watch read") so that a client's EOF or reset is
// noticed at once and reported through ResponseWriter::OnClose. Bytes the watch read
// receives (a pipelined next request) stay in the session buffer and are parsed next.
// Responses are written as raw HTTP/1.1 bytes through one ordered write queue: a whole
// response with Content-Length, or a head with Transfer-Encoding: chunked followed by
// chunks (RFC 9112 section 7.1) and the terminating zero chunk.
//
// HEAD (RFC 9110 section 9.3.2): a HEAD request with no HEAD route runs the path's GET
// handler (ServerCore::FindHandler); whatever answers it (that handler, the fallback, or
// the server's own 404/413/503/500), Queue passes on only the response's head, so the
// status and headers (Content-Length included) are GET's and no body byte is sent.
//
// TLS (ServerOptions::tls_cert_file): the same Session over an ssl::stream on the socket,
// after a server handshake; a failed handshake just closes the connection. A session keeps
// the TLS context it started with (a reload replaces ServerCore::tls_ for new ones only).
//
// Timeouts (ServerOptions): after accepting, the handshake and the first request's header
// must arrive within header_timeout_s. Between requests a kept-alive connection waits
// keep_alive_timeout_s for the first byte of the next one (one read of at least one byte
// into the session buffer, through TLS when on), then header_timeout_s for the rest of its
// header; a pipelined request already in the buffer skips the idle wait. The body then
// has body_timeout_s.
//
// Body budget (ServerOptions::max_buffered_body_bytes, body_budget.h): a request's
// Content-Length is reserved on its header (no room: RefuseBody, before the body is
// read), a chunked body grows its share after each read (ReadBody); the share returns
// when the response ends or the connection closes, whatever closed it (error, timeout,
// client gone, server stop).
//
// Thread-safety: a Session and its Writer run on the connection's strand.
#pragma once

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/openai/error.h"
#include "http/body_budget.h"
#include "http/server.h"
#include "http/wire.h"

namespace kinference::http::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

class Session;

class Writer final : public ResponseWriter {
 public:
  Writer(std::shared_ptr<Session> session, bool keep_alive, bool chunked)
      : session_(std::move(session)), keep_alive_(keep_alive), chunked_(chunked) {}
  ~Writer() override;
  void Send(int status, std::string content_type, std::string body, Headers extra) override;
  void StartStream(int status, std::string content_type, Headers extra) override;
  void Write(std::string data) override;
  void End() override;
  bool closed() const override { return closed_; }
  void OnClose(std::function<void()> callback) override;
  asio::any_io_executor executor() const override;
  size_t pending_bytes() const override;
  void OnWritable(size_t at_most, std::function<void()> callback) override;
  void Abort() override;
  int status() const override { return status_; }

  // Session side: the client went away (or a write failed).
  void ClientGone();
  // Session side: the socket took bytes; pending_bytes() is now `pending`.
  void Wrote(size_t pending);

 private:
  std::shared_ptr<Session> session_;
  bool keep_alive_;
  bool chunked_;
  bool started_ = false;
  int status_ = 0;  // status(): the response's, once begun with the client there
  bool ended_ = false;
  bool closed_ = false;
  bool close_fired_ = false;
  std::function<void()> on_close_;
  size_t writable_at_ = 0;
  std::function<void()> on_writable_;
};

// State shared by the acceptor and its sessions (Server::Impl is this, under the name
// the public header declares).
class ServerCore : public std::enable_shared_from_this<ServerCore> {
 public:
  ServerCore(asio::io_context& io, ServerOptions options)
      : io_(io),
        options_(std::move(options)),
        body_budget_(options_.max_buffered_body_bytes),
        acceptor_(io),
        retry_timer_(io),
        tls_reload_timer_(io) {}

  void Accept();
  // A session closed: accepting resumes if max_connections had paused it.
  void SessionClosed() {
    if (open_sessions_ > 0) --open_sessions_;
    if (accept_paused_ && !stopped_ && !draining_) {
      accept_paused_ = false;
      Accept();
    }
  }
  // Checks the TLS files every tls_reload_interval_s and rebuilds tls_ when they changed.
  void ScheduleTlsReload();
  void ReloadTlsIfChanged();
  const Handler* FindHandler(const std::string& method, const std::string& path) const {
    auto it = routes_.find({method, path});
    if (it != routes_.end()) return &it->second;
    if (method == "HEAD") {  // HEAD is GET without the body (RFC 9110 section 9.3.2)
      it = routes_.find({"GET", path});
      if (it != routes_.end()) return &it->second;
    }
    return fallback_ ? &fallback_ : nullptr;
  }

  asio::io_context& io_;
  ServerOptions options_;
  BodyBudget body_budget_;  // ServerOptions::max_buffered_body_bytes
  tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  std::map<std::pair<std::string, std::string>, Handler> routes_;
  Handler fallback_;
  std::shared_ptr<asio::ssl::context> tls_;  // set: serve HTTPS (new connections)
  std::string tls_stamp_;                    // http::TlsFilesStamp of the loaded files
  asio::steady_timer tls_reload_timer_;
  std::vector<std::weak_ptr<Session>> sessions_;
  bool stopped_ = false;
  bool draining_ = false;       // StopAccepting: no new connections, 503 to new requests
  size_t open_sessions_ = 0;    // accepted and not yet closed
  bool accept_paused_ = false;  // at max_connections: Accept resumes on SessionClosed
};

// The elements of a comma-separated header list over all of `req`'s `field` lines
// (RFC 9110 section 5.3: lines of one field combine as a list), lower-cased, parameters
// (";...") and optional whitespace dropped, empty elements skipped (section 5.6.1).
inline std::vector<std::string> ListElements(const bhttp::request_header<>& req,
                                             bhttp::field field) {
  std::vector<std::string> out;
  for (auto [it, end] = req.equal_range(field); it != end; ++it) {
    std::string_view v = it->value();
    while (!v.empty()) {
      size_t comma = v.find(',');
      std::string_view e = v.substr(0, comma);
      v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
      e = e.substr(0, e.find(';'));
      while (!e.empty() && (e.front() == ' ' || e.front() == '\t')) e.remove_prefix(1);
      while (!e.empty() && (e.back() == ' ' || e.back() == '\t')) e.remove_suffix(1);
      if (e.empty()) continue;
      std::string lower(e);
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out.push_back(std::move(lower));
    }
  }
  return out;
}

// Whether `v` can be a Host field value: uri-host [ ":" port ] (RFC 9110 section 7.2),
// checked by its characters (RFC 3986 section 3.2.2: reg-name's unreserved, pct-encoded
// and sub-delims, an IP-literal's brackets and colons). Empty is valid (section 7.2: a
// target without authority).
inline bool ValidHostValue(std::string_view v) {
  return std::all_of(v.begin(), v.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("-._~%!$&'()*+,;=:[]").find(static_cast<char>(c)) !=
                                  std::string_view::npos;
  });
}

// What the server refuses in a request's head before reading its body, beyond what
// Beast's parser refuses itself (which: docs/reliability.md "Request parsing",
// tests/http/server_parsing_test.cc). Each refusal
// closes the connection (SendErrorAndClose), the body unread, so that no byte of it can
// be taken for a next request (request smuggling).
//  - Transfer-Encoding (RFC 9112 section 6.1, 6.3): in an HTTP/1.0 request, 400 (framing
//    faulty); beside a Content-Length, 400 (the server MAY reject, and Beast takes the
//    Content-Length when the Transfer-Encoding does not end in chunked: the smuggling
//    vector); a final coding other than chunked, or chunked applied twice (section 7),
//    400; any other coding before it (gzip, deflate, ...; none is decoded here), 501.
//  - Host (RFC 9112 section 3.2): missing from an HTTP/1.1 request, repeated, or an
//    invalid value: 400. An HTTP/1.0 request may come without one.
//  - Content-Encoding (RFC 9110 section 8.4, 15.5.16): a body in any coding but identity
//    is 415 with `Accept-Encoding: identity` (section 12.5.3: the codings that would be
//    accepted); a request without a body may carry the field.
// A refusal's Status is kInvalidArgument (its error body: an invalid request in each
// API's shape); the HTTP status is `http_status` (no ErrorCode maps to 415 or 501), which
// ServerOptions::error_body gets too (OpenAI's `code` says 415, not 400).
struct HeadRefusal {
  int http_status;
  Status status;
  Headers extra;  // headers the error carries
};
inline std::optional<HeadRefusal> CheckRequestHead(
    const bhttp::request_parser<bhttp::string_body>& parser) {
  auto refuse = [](int http_status, std::string message, Headers extra = {}) {
    return HeadRefusal{http_status, Status(ErrorCode::kInvalidArgument, std::move(message)),
                       std::move(extra)};
  };
  const auto& req = parser.get();
  if (req.count(bhttp::field::transfer_encoding) > 0) {
    if (req.version() < 11) {
      return refuse(400, "Malformed HTTP request: Transfer-Encoding in an HTTP/1.0 request.");
    }
    if (req.count(bhttp::field::content_length) > 0) {
      return refuse(400, "Malformed HTTP request: both Transfer-Encoding and Content-Length.");
    }
    std::vector<std::string> codings = ListElements(req, bhttp::field::transfer_encoding);
    if (codings.empty() || codings.back() != "chunked" || !parser.chunked() ||
        std::count(codings.begin(), codings.end(), "chunked") > 1) {
      return refuse(400, "Malformed HTTP request: Transfer-Encoding must end in chunked, once.");
    }
    if (codings.size() > 1) {
      return refuse(501, "Transfer coding '" + codings.front() + "' is not supported.");
    }
  }
  if (const size_t hosts = req.count(bhttp::field::host);
      hosts > 1 || (hosts == 0 && req.version() >= 11) ||
      (hosts == 1 && !ValidHostValue(req[bhttp::field::host]))) {
    return refuse(400, hosts == 0
                           ? "Malformed HTTP request: an HTTP/1.1 request needs a Host header."
                           : "Malformed HTTP request: one valid Host header expected.");
  }
  const auto length = parser.content_length();
  if (parser.chunked() || (length && *length > 0)) {
    for (const std::string& coding : ListElements(req, bhttp::field::content_encoding)) {
      if (coding == "identity") continue;
      Headers accept;
      accept.Add("Accept-Encoding", "identity");
      return refuse(415,
                    "Content-Encoding '" + coding +
                        "' is not supported for request bodies; send the body uncompressed.",
                    std::move(accept));
    }
  }
  return std::nullopt;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<ServerCore> server)
      : socket_(std::move(socket)),
        server_(std::move(server)),
        body_share_(server_->body_budget_),
        drain_timer_(socket_.get_executor()),
        idle_timer_(socket_.get_executor()) {
    if (server_->tls_) {
      tls_context_ = server_->tls_;
      tls_.emplace(socket_, *tls_context_);
    }
  }
  ~Session() {
    if (!closed_ && server_->open_sessions_ > 0) --server_->open_sessions_;
  }

  void Start() {
    beast::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    if (!tls_) return ReadRequest();
    // The header timer bounds the handshake too.
    awaiting_header_ = true;
    ArmIdleTimer(server_->options_.header_timeout_s);
    tls_->async_handshake(asio::ssl::stream_base::server,
                          [self = shared_from_this()](beast::error_code ec) {
                            if (ec) return self->ClientGone();
                            self->ReadRequest();
                          });
  }

  // Hard close (server stop): the client is treated as gone.
  void Close() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->ClientGone(); });
  }

  // Writer side: queues response bytes; `last` marks the end of the response. The
  // first call of a response starts with its whole head (FormatHead); for a HEAD request
  // only that head goes out. `hold`: the write starts once the running handler returns
  // (posted), so that what it queues next goes out in the same write: a stream's head
  // and its first chunk, which a handler queues one after the other.
  void Queue(std::string bytes, bool last, bool hold = false) {
    if (closed_) return;
    if (head_only_) {
      if (head_queued_) {
        bytes.clear();
      } else if (size_t end = bytes.find("\r\n\r\n"); end != std::string::npos) {
        bytes.resize(end + 4);
        head_queued_ = true;
      }
      if (bytes.empty() && !last) return;
    }
    pending_ += bytes.size();
    out_.push_back(std::move(bytes));
    if (last) response_done_ = true;
    if (writing_) return;
    if (!hold) return DoWrite();
    writing_ = true;  // later bytes wait in out_ for the posted write
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      self->writing_ = false;
      if (!self->closed_ && !self->out_.empty()) self->DoWrite();
    });
  }
  bool closed() const { return closed_; }
  // A streamed response begins: the socket's send buffer is bounded to
  // ServerOptions::stream_send_buffer_bytes (once per connection).
  void BoundSendBuffer() {
    const size_t bytes = server_->options_.stream_send_buffer_bytes;
    if (bytes == 0 || send_buffer_bounded_ || closed_) return;
    send_buffer_bounded_ = true;
    beast::error_code ec;  // a failure leaves the kernel's autotuning: nothing to do
    socket_.set_option(asio::socket_base::send_buffer_size(static_cast<int>(
                           std::min<size_t>(bytes, std::numeric_limits<int>::max()))),
                       ec);
  }
  // Bytes queued or being written (ResponseWriter::pending_bytes).
  size_t pending() const { return pending_; }
  // A request was dispatched and its response has not finished (nor the client gone).
  bool in_request() const { return in_request_; }
  asio::any_io_executor executor() { return socket_.get_executor(); }

 private:
  // Runs `f` with the stream HTTP is spoken over: TLS or the plain socket.
  template <typename F>
  void WithStream(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(socket_);
    }
  }

  void ReadRequest() {
    if (closed_) return;
    head_only_ = false;
    head_queued_ = false;
    awaiting_header_ = true;
    if (requests_ > 0 && buffer_.size() == 0) return AwaitNextRequest();
    ReadHeader();
  }

  // Kept-alive and idle: waits keep_alive_timeout_s for the next request's first byte.
  void AwaitNextRequest() {
    ArmIdleTimer(server_->options_.keep_alive_timeout_s);
    WithStream([this](auto& stream) {
      stream.async_read_some(buffer_.prepare(4096),
                             [self = shared_from_this()](beast::error_code ec, size_t n) {
                               self->buffer_.commit(n);
                               if (self->closed_) return;
                               if (ec) {
                                 self->awaiting_header_ = false;
                                 self->idle_timer_.cancel();
                                 return self->OnReadError(ec);
                               }
                               self->ReadHeader();
                             });
    });
  }

  void ReadHeader() {
    ++requests_;
    ArmIdleTimer(requests_ == 1 && tls_ ? -1 : server_->options_.header_timeout_s);
    parser_.emplace();
    parser_->header_limit(kMaxRequestHeaderBytes);
    parser_->body_limit(server_->options_.max_body_bytes);
    WithStream([this](auto& stream) {
      bhttp::async_read_header(
          stream, buffer_, *parser_,
          [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
    });
  }

  // Arms the timer that drops a connection stuck in a read: idle before a request
  // (keep_alive_timeout_s), in its header (header_timeout_s) or in its body
  // (body_timeout_s). t < 0: leave the running timer as it is (a TLS connection's first
  // header shares the handshake's deadline).
  void ArmIdleTimer(double t) {
    if (t < 0) return;
    const uint64_t generation = ++idle_generation_;
    idle_timer_.cancel();
    if (t > 0) {
      idle_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(t)));
      idle_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
        if (!ec && (self->awaiting_header_ || self->awaiting_body_) &&
            generation == self->idle_generation_) {
          self->ClientGone();
        }
      });
    }
  }

  void OnHeader(beast::error_code ec) {
    awaiting_header_ = false;
    idle_timer_.cancel();
    if (ec) return OnReadError(ec);
    const auto& req = parser_->get();
    // The one copy of the request's head: header_check sees it, Dispatch adds the body.
    request_ = Request{};
    request_.method = std::string(req.method_string());
    request_.target = std::string(req.target());
    request_.path = request_.target.substr(0, request_.target.find('?'));
    request_.headers = ParsedHeaders();
    if (auto refusal = CheckRequestHead(*parser_)) {
      head_only_ = req.method() == bhttp::verb::head;
      return SendErrorAndClose(refusal->status, request_.path, &request_.headers,
                               std::move(refusal->extra), refusal->http_status);
    }
    if (server_->options_.header_check) {
      if (Status s = server_->options_.header_check(request_); !s.ok()) {
        head_only_ = req.method() == bhttp::verb::head;
        return SendErrorAndClose(s, request_.path, &request_.headers);
      }
    }
    // A declared length is reserved whole before any byte of it is read (body_budget.h).
    if (!body_share_.GrowTo(parser_->content_length().value_or(0))) return RefuseBody();
    if (beast::iequals(req[bhttp::field::expect], "100-continue")) {
      Queue("HTTP/1.1 100 Continue\r\n\r\n", false);
    }
    // From here on every response to this request is a HEAD response (no body).
    head_only_ = req.method() == bhttp::verb::head;
    awaiting_body_ = true;
    ArmIdleTimer(server_->options_.body_timeout_s);
    parser_->eager(true);  // each read parses all it got (as bhttp::async_read does)
    ReadBody();
  }

  // Reads the body one read at a time, so that a chunked body is counted as it grows
  // (body_share_), then dispatches the request.
  void ReadBody() {
    if (parser_->is_done()) {
      awaiting_body_ = false;
      idle_timer_.cancel();
      return Dispatch();
    }
    WithStream([this](auto& stream) {
      bhttp::async_read_some(
          stream, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
            if (self->closed_) return;
            if (ec || !self->body_share_.GrowTo(self->parser_->get().body().size())) {
              self->awaiting_body_ = false;
              self->idle_timer_.cancel();
              return ec ? self->OnReadError(ec) : self->RefuseBody();
            }
            self->ReadBody();
          });
    });
  }

  // No room for this request's body in ServerOptions::max_buffered_body_bytes: 503 with
  // Retry-After, and the connection closes, the rest of the body drained unread.
  void RefuseBody() {
    head_only_ = parser_->get().method() == bhttp::verb::head;
    Headers retry;
    retry.Add("Retry-After", std::to_string(kBodyBudgetRetryAfterS));
    SendErrorAndClose(Status(ErrorCode::kUnavailable,
                             "The server is receiving too many request bodies at once; retry "
                             "the request later."),
                      std::nullopt, nullptr, std::move(retry));
  }

  void OnReadError(beast::error_code ec) {
    // E.g. a HEAD whose Content-Length is over the limit: the 413 gets no body either.
    // A Content-Length over the limit can fail the header read itself, before the parser
    // exposes the method: the request line is still at the front of the buffer then.
    if (parser_ && parser_->get().method() == bhttp::verb::head) head_only_ = true;
    const auto pending = buffer_.data();
    if (parser_ && !parser_->is_header_done() &&
        std::string_view(static_cast<const char*>(pending.data()), pending.size())
            .starts_with("HEAD ")) {
      head_only_ = true;
    }
    if (ec == bhttp::error::body_limit) {
      return SendErrorAndClose(
          Status(ErrorCode::kPayloadTooLarge, "Request body exceeds the limit of " +
                                                  std::to_string(server_->options_.max_body_bytes) +
                                                  " bytes."));
    }
    if (ec == bhttp::error::header_limit) {
      // RFC 6585 section 5: 431 Request Header Fields Too Large (no ErrorCode maps to it).
      return SendErrorAndClose(Status(ErrorCode::kInvalidArgument,
                                      "Request header fields exceed the limit of " +
                                          std::to_string(kMaxRequestHeaderBytes) + " bytes."),
                               std::nullopt, nullptr, {}, 431);
    }
    if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
        ec == asio::error::eof || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::bad_descriptor ||
        ec == asio::ssl::error::stream_truncated ||
        ec.category() == asio::error::get_system_category()) {
      return ClientGone();
    }
    SendErrorAndClose(
        Status(ErrorCode::kInvalidArgument, "Malformed HTTP request: " + ec.message()));
  }

  // The path of the request being read or served, as far as it is known: from the parsed
  // request line, else from the request line at the front of the buffer; empty when
  // unknown.
  std::string CurrentPath() const {
    std::string_view target;
    if (parser_ && !parser_->get().target().empty()) {  // set once the start line parsed
      target = std::string_view(parser_->get().target().data(), parser_->get().target().size());
    } else {
      const auto pending = buffer_.data();
      std::string_view line(static_cast<const char*>(pending.data()), pending.size());
      line = line.substr(0, line.find('\n'));
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos) return {};
      target = line.substr(sp + 1);
      target = target.substr(0, target.find(' '));
    }
    return std::string(target.substr(0, target.find('?')));
  }

 public:
  // The body of an error the server answers itself (ServerOptions::error_body).
  // `http_status`: the status it goes out with.
  std::string ErrorBody(std::string_view path, const Status& status, int http_status) const {
    if (server_->options_.error_body)
      return server_->options_.error_body(path, status, http_status);
    return api::OpenAiErrorBody(status, http_status);
  }
  const std::string& served_path() const { return served_path_; }

 private:
  // Headers added to an error the server answers itself (ServerOptions::error_headers).
  Headers ErrorHeaders(const Headers& request_headers) const {
    if (!server_->options_.error_headers) return {};
    return server_->options_.error_headers(request_headers);
  }

  // The headers of the request being read, as far as parsed (a Content-Length over the
  // limit fails the head's read after its fields were parsed); none without a parser.
  Headers ParsedHeaders() const {
    Headers h;
    if (parser_) {
      for (const auto& f : parser_->get())
        h.Add(std::string(f.name_string()), std::string(f.value()));
    }
    return h;
  }

  // The HTTP status of an error the server answers itself (ServerOptions::error_status).
  int ErrorStatus(std::string_view path, const Status& status) const {
    if (server_->options_.error_status) return server_->options_.error_status(path, status);
    return HttpStatusFor(status.code());
  }

  // `request_headers`: those of the request refused (default: as far as parsed); `more`:
  // headers added after error_headers' (e.g. Retry-After, 415's Accept-Encoding);
  // `http_status`: when not ErrorStatus (0; CheckRequestHead's 415 and 501).
  void SendErrorAndClose(const Status& status, std::optional<std::string> path = std::nullopt,
                         const Headers* request_headers = nullptr, Headers more = {},
                         int http_status = 0) {
    keep_alive_ = false;
    body_share_.Release();  // the body, read or not, goes nowhere
    const std::string error_path = path ? *path : CurrentPath();
    if (http_status == 0) http_status = ErrorStatus(error_path, status);
    std::string body = ErrorBody(error_path, status, http_status);
    Headers extra = ErrorHeaders(request_headers ? *request_headers : ParsedHeaders());
    for (auto& [name, value] : more.items) extra.Add(std::move(name), std::move(value));
    Queue(FormatHead(http_status, "application/json", extra, false, BodyFraming::kContentLength,
                     body.size()) +
              body,
          true);
  }

  void Dispatch() {
    auto msg = parser_->release();
    parser_.reset();
    Request request = std::move(request_);  // its head, from OnHeader
    if (server_->draining_) {
      // Draining (Server::StopAccepting): refuse new requests on kept-alive connections.
      return SendErrorAndClose(
          Status(ErrorCode::kUnavailable, "The server is shutting down; retry the request."),
          request.path, &request.headers);
    }
    in_request_ = true;
    request.body = std::move(msg.body());
    served_path_ = request.path;
    keep_alive_ = msg.keep_alive() && msg.version() >= 11;
    response_done_ = false;
    auto writer = std::make_shared<Writer>(shared_from_this(), keep_alive_, msg.version() >= 11);
    writer_ = writer;
    StartWatch();
    const Handler* handler = server_->FindHandler(request.method, request.path);
    if (handler == nullptr) {
      Status nf(ErrorCode::kNotFound, "Not found: " + request.method + " " + request.path);
      const int nf_status = ErrorStatus(request.path, nf);
      writer->Send(nf_status, "application/json", ErrorBody(request.path, nf, nf_status),
                   ErrorHeaders(request.headers));
      return;
    }
    (*handler)(std::move(request), std::move(writer));
  }

  // Keeps a read pending while a response is in flight, to notice a disconnect.
  void StartWatch() {
    if (closed_ || watching_) return;
    watching_ = true;
    WithStream([this](auto& stream) {
      stream.async_read_some(
          buffer_.prepare(4096),
          [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnWatch(ec, n); });
    });
  }

  void OnWatch(beast::error_code ec, size_t n) {
    watching_ = false;
    buffer_.commit(n);
    if (closed_) return;
    if (next_after_watch_) {
      next_after_watch_ = false;
      ReadRequest();  // an EOF seen by the watch shows up again here and closes
      return;
    }
    if (ec) return ClientGone();
    // Pipelined bytes: keep watching unless the buffer is getting large.
    if (!response_done_ && buffer_.size() < 64 * 1024) StartWatch();
  }

  void DoWrite() {
    writing_ = true;
    current_.clear();
    for (auto& s : out_) current_.append(s);
    out_.clear();
    WithStream([this](auto& stream) {
      asio::async_write(
          stream, asio::buffer(current_),
          [self = shared_from_this()](beast::error_code ec, size_t) { self->OnWrite(ec); });
    });
  }

  void OnWrite(beast::error_code ec) {
    writing_ = false;
    if (closed_) return;
    if (ec) return ClientGone();
    pending_ -= std::min(pending_, current_.size());
    if (auto w = writer_.lock()) w->Wrote(pending_);  // may queue (and start writing) more
    if (closed_ || writing_) return;
    if (!out_.empty()) return DoWrite();
    if (response_done_) FinishResponse();
  }

  void FinishResponse() {
    response_done_ = false;
    in_request_ = false;
    body_share_.Release();
    writer_.reset();
    if (!keep_alive_ || server_->draining_) return GracefulClose();
    if (watching_) {
      next_after_watch_ = true;
      beast::error_code ec;
      socket_.cancel(ec);
    } else {
      ReadRequest();
    }
  }

  // Half-close, then drain what the client still sends (so that closing does not reset
  // the connection before it read our response), for at most 2 seconds.
  void GracefulClose() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    drain_timer_.expires_after(std::chrono::seconds(2));
    drain_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->ClientGone();
    });
    if (!watching_) Drain();
  }

  void Drain() {
    if (closed_) return;
    watching_ = true;
    buffer_.clear();
    WithStream([this](auto& stream) {
      stream.async_read_some(buffer_.prepare(16384),
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               self->watching_ = false;
                               if (ec) return self->ClientGone();
                               self->Drain();
                             });
    });
  }

  void ClientGone() {
    if (closed_) return;
    closed_ = true;
    asio::post(server_->io_, [server = server_] { server->SessionClosed(); });
    in_request_ = false;
    body_share_.Release();
    out_.clear();
    pending_ = 0;
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    drain_timer_.cancel();
    idle_timer_.cancel();
    if (auto w = writer_.lock()) w->ClientGone();
    writer_.reset();
  }

  tcp::socket socket_;
  std::shared_ptr<ServerCore> server_;
  // This request's share of ServerOptions::max_buffered_body_bytes: from its header until
  // its response ended (FinishResponse) or the connection closed (ClientGone).
  BodyReservation body_share_;
  std::shared_ptr<asio::ssl::context> tls_context_;     // the context tls_ was made with
  std::optional<asio::ssl::stream<tcp::socket&>> tls_;  // HTTPS sessions
  asio::steady_timer drain_timer_;
  asio::steady_timer idle_timer_;
  bool awaiting_body_ = false;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  Request request_;  // the head of the request being read (OnHeader), its body once read
  std::weak_ptr<Writer> writer_;
  std::string served_path_;  // path of the request dispatched last
  std::deque<std::string> out_;
  std::string current_;
  size_t pending_ = 0;  // bytes in out_ and current_
  bool writing_ = false;
  bool watching_ = false;
  bool next_after_watch_ = false;
  bool awaiting_header_ = false;
  uint64_t idle_generation_ = 0;
  uint64_t requests_ = 0;  // requests whose header read began on this connection
  bool response_done_ = false;
  bool head_only_ = false;    // the request is a HEAD: Queue sends the head only
  bool head_queued_ = false;  // head_only_: the response's head was queued
  bool keep_alive_ = true;
  bool closed_ = false;
  bool in_request_ = false;
  bool send_buffer_bounded_ = false;  // BoundSendBuffer ran
};

}  // namespace kinference::http::detail
