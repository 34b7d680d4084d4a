// Async HTTP/1.1 client on Boost.Beast with streamed response bodies: the gateway's
// upstream calls, its /metrics scraper and the bench load client.
//
// TLS (ClientRequest::tls): OpenSSL through Boost.Asio's ssl::stream. The server's
// certificate is verified (chain against the system trust store, or ca_file when set;
// host name or IP against the certificate per RFC 6125 via X509_check_host/ip), SNI
// carries the host name (not sent for IP literals, RFC 6066 §3). A failed verification
// or handshake is a kUnavailable "tls handshake" error, never a response.
//
// One Call = one TCP connection, one request, one response (Connection: close is not
// sent; the connection is simply closed after the response). Body bytes are delivered
// as they arrive (chunked decoding done), never buffered whole. Cancel() closes the
// socket, which a vLLM-like server sees as a client disconnect and aborts.
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
  bool tls = false;     // https
  std::string ca_file;  // PEM CA bundle to trust instead of the system store (tls only)
};

struct ClientCallbacks {
  // Response status line and headers arrived.
  std::function<void(int status, const Headers& headers)> on_headers;
  // A piece of the body arrived (after de-chunking).
  std::function<void(std::string_view data)> on_data;
  // Exactly once, last: Ok after the whole body; kUnavailable for connect/IO errors
  // (message says which), kDeadlineExceeded for timeouts, kCancelled after Cancel().
  std::function<void(Status status)> on_complete;
};

class Call {
 public:
  virtual ~Call() = default;
  virtual void Cancel() = 0;
};

std::shared_ptr<Call> StartCall(boost::asio::any_io_executor ex, ClientRequest request,
                                ClientCallbacks callbacks);

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
