// Async HTTP/1.1 client on Boost.Beast with streamed response bodies: the gateway's
// upstream calls, its /metrics scraper and the bench load client.
//
// TLS (ClientRequest::tls): OpenSSL through Boost.Asio's ssl::stream. The server's
// certificate is verified (chain against the system trust store, or ca_file when set;
// host name or IP against the certificate per RFC 6125 via X509_check_host/ip), SNI
// carries the host name (not sent for IP literals, RFC 6066 §3). A failed verification
// or handshake is a kUnavailable "tls handshake" error, never a response.
//
// One Call = one request and one response over an HTTP/1.1 connection. Body bytes are
// delivered as they arrive (chunked decoding done), never buffered whole. Cancel() closes
// the socket, which a vLLM-like server sees as a client disconnect and aborts.
//
// Connection reuse (keep-alive pooling, like Go net/http's Transport or Envoy's pools):
// calls on executors of one io_context share a pool of idle connections (an asio service
// of that io_context, http/connection_pool.h), keyed by (host, port, tls, ca_file, ca_pem,
// client certificate, SNI).
// - A connection goes back to the pool only when the response ended cleanly and
//   completely, the response allowed keep-alive (HTTP/1.1 without `Connection: close`,
//   framed by Content-Length or chunked), no byte beyond it arrived, and the call was not
//   cancelled and did not time out. Anything else closes it, as before.
// - At most 64 idle connections per key (the oldest is closed beyond that); each is
//   closed after pool_idle_timeout_s idle (default 4 s), or at once when the server
//   closes it. 4 s is below uvicorn's default keep-alive timeout of 5 s (encode/uvicorn,
//   uvicorn/config.py: `Config(..., timeout_keep_alive: int = 5)`; vLLM's OpenAI server
//   runs on uvicorn, and http::Server's keep_alive_timeout_s default mirrors it), so that
//   we close first rather than racing the server's close with a new request. A server's
//   `Keep-Alive: timeout=N` header lowers it to N - 1.
// - A reused connection the server closed meanwhile: when writing the request fails with
//   EOF, reset or broken pipe (the server cannot have read all of it), the call is retried
//   once, transparently, on a new connection. When the request was written and the wait
//   for the first response byte fails that way, only GET and HEAD are retried: a POST may
//   have been received and worked on (billed, by a provider) before the connection
//   dropped, so it fails with kUnavailable and the caller's retry policy decides (Go's
//   net/http Transport does the same: it replays a written request only when it is
//   idempotent). Never after a response byte arrived. The idle watch and a peek before
//   reuse discard connections the server closed while idle, which leaves that race to
//   the moment of reuse.
// - Opt out per request with ClientRequest::reuse_connection = false (a new connection,
//   closed after the response, exactly as before pooling). FetchSync never pools.
// - Idle connections are not io_context work: run() still returns once the calls are done.
//
// Thread-safety: a Call lives on the executor it was started on; call Cancel from it.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/server.h"

namespace kinference::http {

struct ClientRequest {
  std::string method = "POST";
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string target = "/";
  Headers headers;  // Host and Content-Length are added
  std::string body;
  std::string content_type = "application/json";
  double connect_timeout_s = 5;
  // Time allowed from sending the request to the response headers (0: none).
  double header_timeout_s = 0;
  // Longest silence allowed while reading the body (0: none).
  double idle_timeout_s = 0;
  // Deadline for the whole call, from StartCall to the end of the body, connect and a
  // stale-connection retry included (0: none). It runs alongside the timeouts above; on
  // expiry the connection is closed (a server sees the client leave) and the call
  // completes with kDeadlineExceeded, like the others.
  double total_timeout_s = 0;
  bool tls = false;     // https
  std::string ca_file;  // PEM CA bundle to trust instead of the system store (tls only)
  // The same given as PEM text (a kubeconfig's certificate-authority-data); trusted in
  // addition to ca_file when both are set, instead of the system store.
  std::string ca_pem;
  // Client certificate chain and private key, PEM text (TLS client authentication, as a
  // kubeconfig's client-certificate-data / client-key-data); both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
  // Take an idle connection from the pool and give the connection back after a clean
  // keep-alive response (see the header comment). false: a connection of its own.
  bool reuse_connection = true;
  // How long the connection may then stay idle in the pool (<= 0: do not pool it).
  double pool_idle_timeout_s = 4;
};

struct ClientCallbacks {
  // Response status line and headers arrived.
  std::function<void(int status, const Headers& headers)> on_headers;
  // Body bytes (de-chunked) as one read brought them: possibly several chunks, <= 16 KiB.
  std::function<void(std::string_view data)> on_data;
  // Exactly once, last: Ok after the whole body; kUnavailable for connect/IO errors
  // (message says which), kDeadlineExceeded for timeouts, kCancelled after Cancel().
  std::function<void(Status status)> on_complete;
};

class Call {
 public:
  virtual ~Call() = default;
  virtual void Cancel() = 0;
  // Backpressure (added): Pause stops reading the response body after the piece being
  // delivered (on_data is not called again until Resume); the socket's receive buffer then
  // fills and TCP flow control stops the server's sending. The idle timeout does not run
  // while paused; the whole-call deadline does. Resume reads on. Both are no-ops once the
  // call completed.
  virtual void Pause() = 0;
  virtual void Resume() = 0;
};

std::shared_ptr<Call> StartCall(boost::asio::any_io_executor ex, ClientRequest request,
                                ClientCallbacks callbacks);

// Connection-pool counters of the io_context `ex` belongs to (all zero when it has none).
struct ClientPoolStats {
  uint64_t opened = 0;         // connections made by calls that may pool
  uint64_t reused = 0;         // calls served on an idle pooled connection
  uint64_t stale_retries = 0;  // reused connections found closed; retried on a new one
  uint64_t closed_idle = 0;    // idle connections closed (timeout, server close, cap)
  size_t idle = 0;             // idle connections now
};
ClientPoolStats GetClientPoolStats(const boost::asio::any_io_executor& ex);

// Whole-body convenience on top of StartCall.
struct Response {
  int status = 0;
  Headers headers;
  std::string body;
};
void Fetch(boost::asio::any_io_executor ex, ClientRequest request,
           std::function<void(Result<Response>)> done);

// Blocking fetch on a private io_context (tests, tools; never on the request path).
Result<Response> FetchSync(ClientRequest request);

// Parses "http://host:port" (path ignored) into host and port. kInvalidArgument if bad.
Result<std::pair<std::string, uint16_t>> ParseHostPort(std::string_view url);

}  // namespace kinference::http
