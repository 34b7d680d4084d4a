// Test helper: an in-process upstream that misbehaves in one chosen way, for the
// reliability tests (admission, backpressure, passive health, error hygiene). Chat
// completions are answered like FakeUpstream's kOk unless the fault says otherwise.
//
// Thread-safety: handlers run on the io_context thread; counters are atomics.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "http/server.h"

namespace kinference::gateway::testing {

enum class Fault {
  // Streams 16 KiB content events for as long as the client takes them (at most 256 KiB
  // queued in its own writer), up to 1 GiB: a long generation for a slow reader.
  kFlood,
  // GET /metrics answers 500; inference is served normally.
  kMetricsFail,
  // POSTs answer 500 with a body that quotes an API key and an internal address, as a
  // careless provider's error does.
  kLeaky500,
  // POSTs answer 404 with a proxy's HTML page (kHtmlPage): not an API error body.
  kHtml404,
  // POSTs answer 404 with a proxy's own JSON (kProxyJson, as Kong's): JSON, but no API
  // error.
  kProxyJson404,
  // POSTs answer 429 with text/plain "slow down" and no JSON.
  kText429,
  // POSTs answer 429 with OpenAI's rate-limit error and its headers: Retry-After: 7,
  // retry-after-ms: 6500, x-should-retry: true, x-ratelimit-remaining-requests: 0.
  kRateLimited429,
  // POSTs answer 503 with a JSON error naming kLeakedAddress, Retry-After: 9 and an
  // unparsable retry-after-ms ("soon").
  kBusy503,
  // POSTs answer 429 with OpenAI's rate-limit error and Retry-After: 2 only.
  kShortRateLimit429,
};

// The page kHtml404 answers with, and kProxyJson404's body; both name an internal address.
inline constexpr const char* kHtmlPage =
    "<html><body><h1>404 Not Found</h1><hr>nginx at 10.1.2.3</body></html>";
inline constexpr const char* kProxyJson =
    R"({"message":"no Route matched with those values","upstream":"10.1.2.3:8000"})";

// The secret and the address kLeaky500's body quotes.
inline constexpr const char* kLeakedKey = "sk-live0123456789abcdefghijklmnop";
inline constexpr const char* kLeakedAddress = "10.1.2.3:8000";

class FaultUpstream {
 public:
  FaultUpstream(boost::asio::io_context& io, Fault fault);
  uint16_t port() const { return port_; }
  int requests() const { return requests_; }
  int closed() const { return *closed_; }           // clients that went away mid-stream
  long long bytes_sent() const { return *bytes_; }  // body bytes handed to the writer
  void Stop() { server_->Stop(); }

 private:
  void Handle(http::Request r, std::shared_ptr<http::ResponseWriter> w);

  Fault fault_;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::shared_ptr<std::atomic<int>> closed_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<long long>> bytes_ = std::make_shared<std::atomic<long long>>(0);
};

}  // namespace kinference::gateway::testing
