// HTTP/1.1 client: a call takes an idle keep-alive connection from the io_context's
// ConnectionPool (http/connection_pool.h) or makes a new one; the body is read
// incrementally with Beast's response_parser<buffer_body> and handed out as it arrives.
#include "http/client.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <compare>
#include <map>
#include <mutex>
#include <optional>

#include "http/connection_pool.h"

namespace kinference::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

namespace ssl = asio::ssl;

// What a TLS client context is made from (ClientRequest's TLS fields).
struct TlsSettings {
  std::string ca_file;
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  auto operator<=>(const TlsSettings&) const = default;
};

// One verifying TLS client context per TlsSettings (all empty = system trust store, no
// client certificate), shared by all calls: loading a trust store per connection would
// cost milliseconds each. An ssl::context is safe to share once configured. Errors:
// kInvalidArgument (a CA, certificate or key that does not load).
Result<std::shared_ptr<ssl::context>> TlsContextFor(const TlsSettings& settings) {
  static std::mutex mu;
  static std::map<TlsSettings, std::shared_ptr<ssl::context>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(settings); it != cache.end()) return it->second;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  beast::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                   ec);
  auto fail = [](const std::string& what, const beast::error_code& e) {
    return Status(ErrorCode::kInvalidArgument, "tls: cannot load " + what + ": " + e.message());
  };
  if (settings.ca_file.empty() && settings.ca_pem.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return fail("CA store", ec);
  }
  if (!settings.ca_file.empty()) {
    ctx->load_verify_file(settings.ca_file, ec);
    if (ec) return fail("CA " + settings.ca_file, ec);
  }
  if (!settings.ca_pem.empty()) {
    ctx->add_certificate_authority(asio::buffer(settings.ca_pem), ec);
    if (ec) return fail("CA (PEM data)", ec);
  }
  if (!settings.client_cert_pem.empty() || !settings.client_key_pem.empty()) {
    ctx->use_certificate_chain(asio::buffer(settings.client_cert_pem), ec);
    if (ec) return fail("client certificate", ec);
    ctx->use_private_key(asio::buffer(settings.client_key_pem), ssl::context::pem, ec);
    if (ec) return fail("client key", ec);
  }
  ctx->set_verify_mode(ssl::verify_peer);
  cache.emplace(settings, ctx);
  return ctx;
}

// Errors that mean "the server closed this connection" when they end the first write or
// the wait for the first response byte on a reused connection.
bool IsStaleConnectionError(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == asio::error::not_connected ||
         ec == ssl::error::stream_truncated;
}

// Seconds from a `Keep-Alive: timeout=N` response header (RFC 2068 §19.7.1.1, still
// sent by some servers); -1 when absent or unparsable.
double KeepAliveTimeoutHint(std::string_view value) {
  size_t at = value.find("timeout=");
  if (at == std::string_view::npos) return -1;
  double v = 0;
  bool any = false;
  for (size_t i = at + 8; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) {
    v = v * 10 + (value[i] - '0');
    any = true;
  }
  return any ? v : -1;
}

class CallImpl final : public Call, public std::enable_shared_from_this<CallImpl> {
 public:
  CallImpl(asio::any_io_executor ex, ClientRequest request, ClientCallbacks callbacks)
      : ex_(ex),
        request_(std::move(request)),
        callbacks_(std::move(callbacks)),
        resolver_(ex),
        timer_(ex),
        total_timer_(ex) {
    if (request_.reuse_connection) pool_ = detail::ConnectionPool::For(ex_);
    beast::error_code ec;
    asio::ip::make_address(request_.host, ec);
    is_ip_ = !ec;
    key_.host = request_.host;
    key_.port = request_.port;
    key_.tls = request_.tls;
    if (request_.tls) {
      key_.ca_file = request_.ca_file;
      key_.ca_pem = request_.ca_pem;
      key_.client_cert_pem = request_.client_cert_pem;
      if (!is_ip_) key_.sni = request_.host;
    }
  }

  // Completion handlers run on the call's executor, whichever executor the (possibly
  // pooled) socket was made with.
  template <typename H>
  auto Bind(H&& handler) {
    return asio::bind_executor(ex_, std::forward<H>(handler));
  }

  void Start() {
    if (done_ || cancelled_) return;
    ArmTotalTimer();
    if (pool_ != nullptr) {
      if (auto conn = pool_->Take(key_)) {
        conn_ = std::move(conn);
        reused_ = true;
        ArmTimer(request_.connect_timeout_s);
        return WriteRequest();
      }
    }
    Open();
  }

  // A new connection: socket, TLS stream (for https), then resolve and connect.
  void Open() {
    if (done_ || cancelled_) return;
    reused_ = false;
    // A pooled connection may serve calls on other executors of the same io_context;
    // every handler of the call is bound to the call's executor (Bind) regardless.
    conn_ = std::make_shared<detail::Connection>(
        pool_ != nullptr ? asio::any_io_executor(pool_->io().get_executor()) : ex_);
    if (request_.tls) {
      auto ctx = TlsContextFor(TlsSettings{request_.ca_file, request_.ca_pem,
                                           request_.client_cert_pem, request_.client_key_pem});
      if (!ctx.ok()) return Complete(Status(ErrorCode::kUnavailable, ctx.status().message()));
      conn_->tls_ctx = *ctx;
      conn_->tls.emplace(conn_->socket, *conn_->tls_ctx);
      beast::error_code ec;
      bool ok = true;
      // SNI only for host names (RFC 6066 §3 forbids literal IP addresses).
      if (!is_ip_) {
        ok = SSL_set_tlsext_host_name(conn_->tls->native_handle(), request_.host.c_str()) == 1;
      }
      conn_->tls->set_verify_callback(ssl::host_name_verification(request_.host), ec);
      if (!ok || ec) return Complete(Status(ErrorCode::kUnavailable, "tls: cannot set up SNI"));
    }
    ArmTimer(request_.connect_timeout_s);
    beast::error_code ec;
    auto address = asio::ip::make_address(request_.host, ec);
    if (!ec) {
      Connect(tcp::endpoint(address, request_.port));
      return;
    }
    resolver_.async_resolve(
        request_.host, std::to_string(request_.port),
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
          if (ec || results.empty()) return self->Fail(ec, "resolve " + self->request_.host);
          self->ConnectAny(std::move(results));
        });
  }

  void Pause() override {
    if (done_ || paused_) return;
    paused_ = true;
  }

  void Resume() override {
    if (done_ || !paused_) return;
    paused_ = false;
    if (!parked_) return;
    parked_ = false;
    asio::post(ex_, [self = shared_from_this()] { self->ReadBody(); });
  }

  void Cancel() override {
    if (done_) return;
    cancelled_ = true;
    CloseAll();
    asio::post(ex_, [self = shared_from_this()] {
      self->Complete(Status(ErrorCode::kCancelled, "cancelled"));
    });
  }

 private:
  // Tries each resolved address in turn (e.g. "localhost": ::1, then 127.0.0.1).
  void ConnectAny(tcp::resolver::results_type results) {
    if (done_) return;
    asio::async_connect(
        conn_->socket, results,
        Bind([self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
          if (ec) return self->Fail(ec, "connect");
          self->OnConnected();
        }));
  }

  void OnConnected() {
    if (pool_ != nullptr) pool_->CountOpened();
    beast::error_code ignored;
    conn_->socket.set_option(tcp::no_delay(true), ignored);
    if (!conn_->tls) return WriteRequest();
    conn_->tls->async_handshake(ssl::stream_base::client,
                                Bind([self = shared_from_this()](beast::error_code ec) {
                                  if (ec) return self->Fail(ec, "tls handshake");
                                  self->WriteRequest();
                                }));
  }

  // Runs `f` with the stream the call speaks HTTP over: TLS or the plain socket.
  template <typename F>
  void WithStream(F&& f) {
    if (conn_->tls) {
      f(*conn_->tls);
    } else {
      f(conn_->socket);
    }
  }

  void Connect(tcp::endpoint ep) {
    if (done_) return;
    conn_->socket.async_connect(ep, Bind([self = shared_from_this()](beast::error_code ec) {
                                  if (ec) return self->Fail(ec, "connect");
                                  self->OnConnected();
                                }));
  }

  void WriteRequest() {
    if (done_) return;
    if (!request_built_) BuildRequest();
    // The connect timer keeps running through the write; then the header timeout.
    WithStream([this](auto& stream) {
      bhttp::async_write(stream, req_,
                         Bind([self = shared_from_this()](beast::error_code ec, size_t) {
                           if (ec) return self->Fail(ec, "write");
                           self->ReadHeader();
                         }));
    });
  }

  void BuildRequest() {
    request_built_ = true;
    bhttp::verb verb = bhttp::string_to_verb(request_.method);
    req_.version(11);
    if (verb == bhttp::verb::unknown) {
      req_.method_string(request_.method);
    } else {
      req_.method(verb);
    }
    req_.target(request_.target);
    req_.set(bhttp::field::host, request_.host + ":" + std::to_string(request_.port));
    for (const auto& [k, v] : request_.headers.items) req_.insert(k, v);
    if (!request_.body.empty() || verb == bhttp::verb::post || verb == bhttp::verb::put) {
      if (!request_.content_type.empty()) {
        req_.set(bhttp::field::content_type, request_.content_type);
      }
      req_.body() = std::move(request_.body);
    }
    req_.prepare_payload();
    head_only_ = verb == bhttp::verb::head;
  }

  void ReadHeader() {
    if (done_) return;
    ArmTimer(request_.header_timeout_s);
    buffer_.clear();
    parser_.emplace();
    parser_->body_limit(boost::none);
    parser_->skip(head_only_);
    WithStream([this](auto& stream) {
      bhttp::async_read_header(stream, buffer_, *parser_,
                               Bind([self = shared_from_this()](beast::error_code ec, size_t) {
                                 if (ec) return self->Fail(ec, "read header");
                                 self->OnHeader();
                               }));
    });
  }

  void OnHeader() {
    if (done_) return;
    const auto& msg = parser_->get();
    if (callbacks_.on_headers) {
      Headers headers;
      for (const auto& f : msg) {
        headers.Add(std::string(f.name_string()), std::string(f.value()));
      }
      callbacks_.on_headers(static_cast<int>(msg.result_int()), headers);
      if (done_ || cancelled_) return;
    }
    // Room for every byte the socket holds (up to kReadBytes) in one read; OnBody then
    // parses every complete chunk it brought.
    buffer_.reserve(kReadBytes);
    ReadBody();
  }

  void ReadBody() {
    if (done_ || cancelled_) return;
    if (parser_->is_done()) return Complete(Status::Ok());
    if (paused_) {  // Resume reads on
      parked_ = true;
      ArmTimer(0);
      return;
    }
    ArmIdleTimer();
    auto& body = parser_->get().body();
    body.data = chunk_;
    body.size = sizeof chunk_;
    WithStream([this](auto& stream) {
      bhttp::async_read_some(
          stream, buffer_, *parser_,
          Bind([self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); }));
    });
  }

  void OnBody(beast::error_code ec) {
    if (done_) return;
    if (ec == bhttp::error::need_buffer) ec = {};
    // A TLS peer closing without close_notify where the framing says the body ends.
    if (ec == ssl::error::stream_truncated && parser_->is_done()) {
      ec = {};
      peer_closed_ = true;
    }
    if (ec) return Fail(ec, "read body");
    // One put parses one chunk header or one chunk's data: parse on while bytes are
    // buffered, so that a burst of small chunks (one per token) is one on_data and no
    // further read. (Beast's eager mode would do this inside read_some, but read_some
    // then waits for the next chunk's header before completing.)
    auto& body = parser_->get().body();
    beast::error_code parse_error;  // after the bytes before it are delivered
    while (buffer_.size() > 0 && body.size > 0 && !parser_->is_done()) {
      beast::error_code pec;
      const size_t used = parser_->put(buffer_.data(), pec);
      buffer_.consume(used);
      if (pec == bhttp::error::need_more || pec == bhttp::error::need_buffer) break;
      if (pec) {
        parse_error = pec;
        break;
      }
      if (used == 0) break;
    }
    size_t n = sizeof chunk_ - body.size;
    if (n > 0 && callbacks_.on_data && !cancelled_) {
      callbacks_.on_data(std::string_view(chunk_, n));
    }
    if (parse_error) return Fail(parse_error, "read body");
    ReadBody();
  }

  // Deadline `seconds` from now (replacing the previous one), or none when 0.
  void ArmTimer(double seconds) {
    idle_armed_ = false;
    ++timer_generation_;
    timer_.cancel();
    if (seconds <= 0) return;
    timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(seconds)));
    timer_.async_wait([self = shared_from_this(), gen = timer_generation_](beast::error_code ec) {
      if (ec || gen != self->timer_generation_ || self->done_) return;
      self->timed_out_ = true;
      self->CloseAll();
    });
  }

  // The idle timeout (ClientRequest::idle_timeout_s) from now. Re-arming a timer on every
  // read would cost a timer-queue update per chunk: the armed wait moves to the latest
  // deadline when it fires instead.
  void ArmIdleTimer() {
    if (request_.idle_timeout_s <= 0) return ArmTimer(0);
    idle_deadline_ = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(request_.idle_timeout_s));
    if (idle_armed_) return;
    ArmTimer(0);
    idle_armed_ = true;
    WaitIdle();
  }

  void WaitIdle() {
    timer_.expires_at(idle_deadline_);
    timer_.async_wait([self = shared_from_this(), gen = timer_generation_](beast::error_code ec) {
      if (ec || gen != self->timer_generation_ || self->done_) return;
      if (std::chrono::steady_clock::now() < self->idle_deadline_) return self->WaitIdle();
      self->idle_armed_ = false;
      self->timed_out_ = true;
      self->CloseAll();
    });
  }

  // The whole-call deadline (ClientRequest::total_timeout_s), armed once at Start.
  void ArmTotalTimer() {
    if (request_.total_timeout_s <= 0) return;
    total_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(request_.total_timeout_s)));
    total_timer_.async_wait(Bind([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->done_) return;
      self->timed_out_ = true;
      self->CloseAll();
    }));
  }

  void Fail(beast::error_code ec, const std::string& what) {
    if (cancelled_) return Complete(Status(ErrorCode::kCancelled, "cancelled"));
    // A reused connection the server closed meanwhile (its keep-alive timeout raced our
    // request): once, on a new connection, and only before any response byte arrived;
    // after the request was written, only an idempotent one (client.h).
    const bool idempotent = request_.method == "GET" || request_.method == "HEAD";
    if (reused_ && !retried_ && !timed_out_ &&
        (what == "write" || (what == "read header" && idempotent)) && buffer_.size() == 0 &&
        (!parser_ || !parser_->got_some()) && IsStaleConnectionError(ec)) {
      retried_ = true;
      if (pool_ != nullptr) pool_->CountStaleRetry();
      CloseAll();
      return Open();
    }
    if (timed_out_) {
      return Complete(Status(
          ErrorCode::kDeadlineExceeded,
          "timed out (" + what + ") to " + request_.host + ":" + std::to_string(request_.port)));
    }
    Complete(Status(
        ErrorCode::kUnavailable,
        what + " " + request_.host + ":" + std::to_string(request_.port) + ": " + ec.message()));
  }

  void CloseAll() {
    beast::error_code ignored;
    resolver_.cancel();
    if (!conn_) return;
    conn_->socket.shutdown(tcp::socket::shutdown_both, ignored);
    conn_->socket.close(ignored);
  }

  // The connection may carry another request: the whole response arrived, nothing more
  // was sent, the server allows keep-alive, and the call was neither cancelled nor timed
  // out. Returns the idle timeout to keep it for (<= 0: do not keep it).
  double ReusableFor(const Status& status) const {
    if (pool_ == nullptr || !conn_ || !status.ok() || cancelled_ || timed_out_ || peer_closed_ ||
        !parser_ || !parser_->is_done() || buffer_.size() != 0) {
      return 0;
    }
    const auto& msg = parser_->get();
    if (msg.version() < 11 || !parser_->keep_alive()) return 0;
    double idle_s = request_.pool_idle_timeout_s;
    // A server announcing its own idle timeout: leave it one second to spare.
    if (auto it = msg.find("keep-alive"); it != msg.end()) {
      double hint = KeepAliveTimeoutHint(std::string_view(it->value().data(), it->value().size()));
      if (hint >= 0) idle_s = std::min(idle_s, hint - 1);
    }
    return idle_s;
  }

  void Complete(Status status) {
    if (done_) return;
    done_ = true;
    ++timer_generation_;
    timer_.cancel();
    total_timer_.cancel();
    if (double idle_s = ReusableFor(status); idle_s > 0) {
      resolver_.cancel();
      pool_->Put(key_, std::move(conn_), idle_s);
      conn_.reset();
    } else {
      CloseAll();
    }
    auto on_complete = std::move(callbacks_.on_complete);
    // Callbacks often capture this call; dropping them breaks the cycle.
    callbacks_ = ClientCallbacks{};
    if (on_complete) on_complete(std::move(status));
  }

  asio::any_io_executor ex_;
  ClientRequest request_;
  ClientCallbacks callbacks_;
  tcp::resolver resolver_;
  detail::ConnectionPool* pool_ = nullptr;  // null: this call does not pool
  detail::PoolKey key_;
  std::shared_ptr<detail::Connection> conn_;  // null once handed back to the pool
  // Bytes a body read may take from the socket at once (16 KiB, as chunk_ holds).
  static constexpr size_t kReadBytes = 16384;

  asio::steady_timer timer_;
  uint64_t timer_generation_ = 0;
  // The idle wait is armed (ArmIdleTimer) and expires at idle_deadline_ or, when it fires
  // before that, waits again until it.
  bool idle_armed_ = false;
  std::chrono::steady_clock::time_point idle_deadline_;
  asio::steady_timer total_timer_;  // ClientRequest::total_timeout_s
  bhttp::request<bhttp::string_body> req_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  char chunk_[16384];
  bool head_only_ = false;
  bool is_ip_ = false;
  bool request_built_ = false;
  bool reused_ = false;       // conn_ came from the pool
  bool retried_ = false;      // the one stale-connection retry was used
  bool peer_closed_ = false;  // the server closed after the response
  bool done_ = false;
  bool cancelled_ = false;
  bool paused_ = false;  // Pause: ReadBody parks instead of reading
  bool parked_ = false;  // a body read is waiting for Resume
  bool timed_out_ = false;
};

}  // namespace

std::shared_ptr<Call> StartCall(asio::any_io_executor ex, ClientRequest request,
                                ClientCallbacks callbacks) {
  auto call = std::make_shared<CallImpl>(ex, std::move(request), std::move(callbacks));
  // Start from the executor so that callbacks never run inside StartCall itself.
  asio::post(ex, [call] { call->Start(); });
  return call;
}

ClientPoolStats GetClientPoolStats(const asio::any_io_executor& ex) {
  auto* pool = detail::ConnectionPool::For(ex);
  return pool == nullptr ? ClientPoolStats{} : pool->counters();
}

void Fetch(asio::any_io_executor ex, ClientRequest request,
           std::function<void(Result<Response>)> done) {
  auto response = std::make_shared<Response>();
  ClientCallbacks cb;
  cb.on_headers = [response](int status, const Headers& headers) {
    response->status = status;
    response->headers = headers;
  };
  cb.on_data = [response](std::string_view data) { response->body.append(data); };
  cb.on_complete = [response, done = std::move(done)](Status status) {
    if (!status.ok()) return done(status);
    done(std::move(*response));
  };
  StartCall(ex, std::move(request), std::move(cb));
}

Result<Response> FetchSync(ClientRequest request) {
  request.reuse_connection = false;  // a private io_context: nothing to reuse
  asio::io_context io;
  std::optional<Result<Response>> result;
  Fetch(io.get_executor(), std::move(request), [&](Result<Response> r) { result = std::move(r); });
  io.run();
  if (!result) return Status(ErrorCode::kInternal, "fetch did not complete");
  return std::move(*result);
}

Result<std::pair<std::string, uint16_t>> ParseHostPort(std::string_view url) {
  std::string_view rest = url;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.find("://") != std::string_view::npos) {
    return Status(ErrorCode::kInvalidArgument, "unsupported scheme in " + std::string(url));
  }
  rest = rest.substr(0, rest.find('/'));
  std::string_view host = rest, port_text;
  if (rest.starts_with("[")) {  // [IPv6]:port
    size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return Status(ErrorCode::kInvalidArgument, "bad host in " + std::string(url));
    }
    host = rest.substr(1, close - 1);
    std::string_view after = rest.substr(close + 1);
    if (after.starts_with(":")) port_text = after.substr(1);
  } else if (size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
  }
  if (host.empty()) return Status(ErrorCode::kInvalidArgument, "no host in " + std::string(url));
  uint16_t port = 80;
  if (!port_text.empty() || rest.ends_with(":")) {
    unsigned long v = 0;
    if (port_text.empty() || port_text.size() > 5) {
      return Status(ErrorCode::kInvalidArgument, "bad port in " + std::string(url));
    }
    for (char c : port_text) {
      if (c < '0' || c > '9') {
        return Status(ErrorCode::kInvalidArgument, "bad port in " + std::string(url));
      }
      v = v * 10 + static_cast<unsigned long>(c - '0');
    }
    if (v == 0 || v > 65535) {
      return Status(ErrorCode::kInvalidArgument, "bad port in " + std::string(url));
    }
    port = static_cast<uint16_t>(v);
  }
  return std::make_pair(std::string(host), port);
}

}  // namespace kinference::http
