// RestClient: requests to the Kubernetes API server over the project's HTTP client
// (http/client.h: Boost.Beast, TLS verified against the cluster CA, keep-alive pooling).
//
// Authentication: `Authorization: Bearer <token>` from ClusterConfig::token, or from
// token_file, re-read at most kTokenRereadS after the last read (client-go's
// cachingTokenSource re-reads a service-account token file once a minute, because the
// kubelet rotates it; kubernetes.io "Bound service account token volume"), and at once
// after a 401; or a TLS client certificate.
//
// Call answers every HTTP status as a value (ApiResponse): 404, 409 Conflict and 410 Gone
// are decisions for the caller (ApiErrorMessage reads the metav1.Status body). Transport
// failures (refused, reset, TLS, timeouts) are Status errors (kUnavailable,
// kDeadlineExceeded). Watch streams a response line by line: the API server writes one
// JSON watch event per line ({"type": ..., "object": ...}).
//
// Thread-safety: not thread-safe; use one RestClient on one io_context thread (its calls
// complete on `executor`). CallSync runs a private io_context and blocks (CLI tools only).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/client.h"
#include "k8s/kubeconfig.h"

namespace kinference::k8s {

// Seconds a token read from token_file is used before it is read again (client-go).
inline constexpr double kTokenRereadS = 60;
// Default deadline for one non-watch request (our choice: a LIST page of 500 objects on a
// loaded API server returns in well under a second).
inline constexpr double kDefaultRequestTimeoutS = 30;

inline constexpr std::string_view kMergePatch = "application/merge-patch+json";
inline constexpr std::string_view kJsonPatch = "application/json-patch+json";

struct ApiResponse {
  int status = 0;
  std::string body;
  bool ok() const { return status >= 200 && status < 300; }
};

// "<code> <reason>: <message>" from a metav1.Status body, or the HTTP status and body.
std::string ApiErrorMessage(const ApiResponse& response);
// Parses the body as JSON; a non-object is kInternal.
Result<boost::json::object> ParseObject(const ApiResponse& response);

class RestClient {
 public:
  RestClient(boost::asio::any_io_executor executor, ClusterConfig config);

  const ClusterConfig& config() const { return config_; }
  boost::asio::any_io_executor executor() const { return executor_; }

  using Done = std::function<void(Result<ApiResponse>)>;
  // One request: `target` is the API path with its query ("/api/v1/pods?limit=500").
  void Call(std::string method, std::string target, std::string body, std::string_view content_type,
            Done done, double timeout_s = kDefaultRequestTimeoutS);
  void Get(std::string target, Done done) {
    Call("GET", std::move(target), "", "", std::move(done));
  }

  struct WatchCallbacks {
    std::function<void(int status)> on_status;           // response headers arrived
    std::function<void(std::string_view line)> on_line;  // one event (without '\n')
    // Last, once: Ok when the server ended the stream; an error otherwise. A non-2xx
    // response's body was passed to on_line first.
    std::function<void(Status)> on_done;
  };
  // Streams `target` (a ?watch=1 URL); `idle_timeout_s` bounds silence between bytes
  // (0: none). Cancel the returned call to stop.
  std::shared_ptr<http::Call> Watch(std::string target, double idle_timeout_s, WatchCallbacks cb);

 private:
  // The bearer token, re-read from token_file as described above. Shared with calls in
  // flight (a 401 marks it stale), so that they may outlive the client.
  struct TokenCache {
    std::string token;
    std::chrono::steady_clock::time_point read_at{};
    bool stale = true;
  };
  http::ClientRequest Base(std::string method, std::string target);
  std::string Token();

  boost::asio::any_io_executor executor_;
  ClusterConfig config_;
  std::shared_ptr<TokenCache> tokens_ = std::make_shared<TokenCache>();
};

// Blocking request on a private io_context (CLI tools). Same results as Call.
Result<ApiResponse> CallSync(const ClusterConfig& config, std::string method, std::string target,
                             std::string body = "", std::string_view content_type = "",
                             double timeout_s = kDefaultRequestTimeoutS);

}  // namespace kinference::k8s
