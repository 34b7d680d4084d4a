// HTTP/1.1 server on Boost.Beast for the shells (gateway, engine-sim): routes requests
// to handlers that answer whole or stream (chunked transfer encoding, for SSE).
//
// Promises: keep-alive; request bodies above ServerOptions::max_body_bytes are refused
// with 413 and an OpenAI-shaped error body, malformed HTTP with 400, a request head over
// Beast's header limit (8 KiB) with 431 (RFC 6585 section 5), unknown paths with
// 404 (fallback handler if set), bodies beyond max_buffered_body_bytes held across all
// connections with 503 and Retry-After; a request head that frames its body ambiguously
// or in a way not served (Transfer-Encoding beside Content-Length or not ending in chunked,
// an HTTP/1.1 request without exactly one valid Host, a body in a Content-Encoding other
// than identity) with 400, 501 or 415 before any of its body is read, the connection
// closed (RFC 9112 sections 3.2, 6.1, 6.3; RFC 9110 section 15.5.16; the list and its
// reasons: CheckRequestHead in session.h, docs/reliability.md "Request parsing"); trailer
// fields of a chunked body never reach Request::headers; a handler learns that its
// client went away through ResponseWriter::OnClose (a streaming response keeps reading
// the socket to notice EOF);
// nothing a client sends can crash the process. HEAD (RFC 9110 section 9.3.2): a path
// with a GET route and no HEAD route answers HEAD through the GET handler (Request::method
// stays "HEAD"), and no response to a HEAD request carries a body: its status and headers
// (Content-Length included) are what GET would get.
//
// Thread-safety: the Server and every ResponseWriter live on one io_context; call all
// methods from its thread(s) (use asio::post to get there). Handlers run on it.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace kinference::http {

// Header list; names compared case-insensitively by Find.
struct Headers {
  std::vector<std::pair<std::string, std::string>> items;
  void Add(std::string name, std::string value) {
    items.emplace_back(std::move(name), std::move(value));
  }
  // Value of the first header named `name` (case-insensitive); empty if absent.
  std::string_view Find(std::string_view name) const;
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent, with query
  std::string path;    // target without query
  Headers headers;
  std::string body;
};

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // A whole response. Content-Length is set.
  virtual void Send(int status, std::string content_type, std::string body, Headers extra = {}) = 0;
  // Starts a chunked response; follow with Write()s and End().
  virtual void StartStream(int status, std::string content_type, Headers extra = {}) = 0;
  // Queues one chunk; chunks go out in order, each as soon as the socket takes it.
  virtual void Write(std::string data) = 0;
  // Ends a stream (terminating zero chunk). Idempotent.
  virtual void End() = 0;
  // True once the client disconnected or a write failed.
  virtual bool closed() const = 0;
  // Called once when the client disconnects before the response ended.
  virtual void OnClose(std::function<void()> callback) = 0;
  virtual boost::asio::any_io_executor executor() const = 0;
  // Backpressure (added): bytes queued for this client and not yet taken by its socket
  // (the response head and chunk framing included). A client that stops reading makes it
  // grow; the socket's kernel buffers are not counted.
  virtual size_t pending_bytes() const = 0;
  // Calls `callback` once, on the writer's executor, when pending_bytes() is at most
  // `at_most` (posted at once if it already is); never if the client goes away first. A
  // later call replaces a callback not yet called.
  virtual void OnWritable(size_t at_most, std::function<void()> callback) = 0;
  // Closes the client's connection now, response unfinished (a stalled client): queued
  // bytes are dropped and the OnClose callback is not called. No-op once closed.
  virtual void Abort() = 0;
  // The status of the response this writer began (Send or StartStream) while its client
  // was there: what the client got. 0 before, or when the client had gone (a response it
  // never received).
  virtual int status() const = 0;
};

using Handler = std::function<void(Request, std::shared_ptr<ResponseWriter>)>;

// Retry-After (seconds) on a request refused for ServerOptions::max_buffered_body_bytes.
// Our choice: the held bytes return as the requests in flight end, which is not known
// ahead; 5 s is about what a 32 MiB body takes to arrive at 50 Mbit/s, and both the
// openai and anthropic SDKs wait what Retry-After says (docs/reliability.md).
inline constexpr int kBodyBudgetRetryAfterS = 5;

// A request's head (request line and header fields) at most, bytes; a larger one is
// refused with 431 (RFC 6585 section 5) and the connection closed. 8 KiB is Beast's own
// default for a request_parser's header_limit, kept: nginx's large_client_header_buffers
// also allows 8 KiB per line by default.
inline constexpr uint32_t kMaxRequestHeaderBytes = 8 * 1024;

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;                         // 0: pick a free port
  size_t max_body_bytes = 32 * 1024 * 1024;  // 413 above this
  // Timeouts, seconds (0: no limit). A connection is closed when:
  //  - header_timeout_s: a request's header has not fully arrived this long after its
  //    first byte (for a connection's first request: after accepting it, the TLS
  //    handshake included). 5 s: slow-header (Slowloris) connections must not pile up.
  //  - keep_alive_timeout_s: an idle kept-alive connection sends no byte of a next
  //    request this long after the last response. 5 s is uvicorn's default
  //    timeout_keep_alive, which vLLM's API server uses.
  //  - body_timeout_s: a request's body has not fully arrived this long after its header
  //    (slow or stalled uploads must not hold connections forever). 60 s is our choice: a
  //    32 MiB body needs ~4.5 Mbit/s to arrive in time.
  double header_timeout_s = 5;
  double keep_alive_timeout_s = 5;
  double body_timeout_s = 60;
  // Serve HTTPS with this PEM certificate chain and private key (both set). Start fails
  // with kInvalidArgument when they cannot be loaded (http/tls_server.h).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Open connections at most (added; 0: no limit). At the limit the server stops
  // accepting until one closes: new connections wait in the kernel's listen backlog, so a
  // flood of clients costs no memory beyond the sockets the kernel holds.
  size_t max_connections = 0;
  // The kernel send buffer (SO_SNDBUF, bytes) of a connection once a streamed response
  // begins on it (added; 0: the kernel's autotuning, up to net.ipv4.tcp_wmem's maximum,
  // 4 MiB by default). Bounded, what a client has not taken stays in
  // ResponseWriter::pending_bytes() instead of vanishing into the kernel, so that
  // backpressure above it engages: with autotuning, loopback sockets took 3.5 MiB of a
  // stream whose client read nothing before any byte was pending, and a gateway stream of
  // that size was never paused (docs/reliability.md "Backpressure"). Linux doubles the
  // value (socket(7)).
  size_t stream_send_buffer_bytes = 0;
  // Request-body bytes held at once across all connections at most (added; 0: no limit),
  // counted from a request's header until its response has ended or its connection
  // closed (what is counted, and why a declared Content-Length is reserved whole on the
  // header: http/body_budget.h). A request whose Content-Length does not fit in what is
  // left, or a chunked body that grows past it, is answered 503 (ErrorCode::kUnavailable,
  // through error_status, error_body and error_headers) with `Retry-After:
  // kBodyBudgetRetryAfterS` and the connection closed, its body drained unread. Bodies
  // of at most 64 KiB (body_budget.h kAlwaysAdmittedBodyBytes) are never refused: with
  // max_connections the bytes held stay below this + max_connections x 64 KiB. Set it at
  // least max_body_bytes, or a body between the two is always refused.
  size_t max_buffered_body_bytes = 0;
  // Body of the errors the server answers itself (413 over max_body_bytes, 400 malformed
  // HTTP, 404 without a route or fallback, 503 while draining, 500 when a handler dropped
  // its writer) for a request to `path` (its target without the query; empty when not
  // even the request line could be read), so that each API's paths get its own error
  // shape (added). `http_status` is the status the error goes out with (error_status's,
  // or the server's own for a refusal no ErrorCode maps to: 415, 431, 501), for a shape
  // that carries it (OpenAI's `code`). Unset: api::OpenAiErrorBody(status, http_status).
  // Always served as application/json.
  std::function<std::string(std::string_view path, const Status& status, int http_status)>
      error_body;
  // The HTTP status of those same errors (added), so that an API with its own status for
  // an error code gets it (Anthropic's 529 for kUnavailable under /v1/messages). Unset:
  // HttpStatusFor(status.code()).
  std::function<int(std::string_view path, const Status& status)> error_status;
  // Headers added to those same errors, given the request's headers as far as they were
  // read (none for a request line that did not parse): the gateway adds x-request-id, so
  // that a client can quote even these errors (added). Unset: none.
  std::function<Headers(const Headers& request_headers)> error_headers;
  // Called when a request's header has arrived, before any byte of its body is read, with
  // the request as far as known (method, target, path, headers; no body) (added). A non-OK
  // status is answered at once like the server's own errors (error_body, error_headers,
  // HttpStatusFor) and the connection closed, its body drained unread, so that a request
  // refused on its header (e.g. no valid key) does not first buffer up to max_body_bytes.
  // Unset or OK: the body is read and the request routed as usual. Runs only for a head
  // the server itself accepted (CheckRequestHead in session.h refuses first), and sees
  // the same Request object the handler later gets with its body.
  std::function<Status(const Request& head)> header_check;
  // Non-empty: clients must present a certificate that verifies against this PEM CA
  // bundle (mutual TLS); handshakes without one fail.
  std::string tls_client_ca_file;
  // While serving HTTPS, the files above are checked this often (seconds; 0: never) and
  // the TLS context rebuilt when they changed: new connections get the new certificate,
  // established ones keep theirs. A change that does not load keeps the previous context.
  double tls_reload_interval_s = 10;
  // Called on the io_context after each reload attempt: OK when the new files are in use,
  // the load error otherwise. May be empty.
  std::function<void(const Status&)> on_tls_reload;
};

class Server {
 public:
  Server(boost::asio::io_context& io, ServerOptions options);
  ~Server();
  // Exact-path routes; later routes with the same method and path replace earlier ones.
  // A GET route also serves HEAD (without the body) unless a HEAD route is set.
  void Route(std::string method, std::string path, Handler handler);
  // For requests no route matches (default: 404 OpenAI-shaped error).
  void SetFallback(Handler handler);
  // Binds and starts accepting; returns the bound port. Errors: kUnavailable.
  Result<uint16_t> Start();
  // Graceful drain (added): closes the acceptor at once, so new connections are refused;
  // requests already dispatched run to completion, after which their connections close;
  // a new request on a kept-alive connection gets 503 with an OpenAI error body and
  // `Connection: close`. Stop() still closes everything.
  void StopAccepting();
  // Requests dispatched whose response has not finished and whose client is still there.
  size_t ActiveRequests() const;
  // Connections open now (accepted, not yet closed).
  size_t OpenConnections() const;
  // Request-body bytes held now (ServerOptions::max_buffered_body_bytes; counted also
  // without a limit).
  size_t BufferedBodyBytes() const;
  void Stop();

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

// Sends api::OpenAiErrorBody (api/openai/error.h) with HttpStatusFor(status.code()).
void SendOpenAiError(ResponseWriter& w, const Status& status);

}  // namespace kinference::http
