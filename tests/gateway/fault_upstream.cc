#include "fault_upstream.h"

#include <boost/json.hpp>
#include <functional>

#include "api/sse.h"

namespace kinference::gateway::testing {
namespace {

std::string Chunk(const std::string& delta_json, const std::string& finish = "null") {
  return R"({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":)" +
         delta_json + R"(,"finish_reason":)" + finish + "}]}";
}

constexpr size_t kFloodQueued = 256 * 1024;
constexpr long long kFloodTotal = 1LL << 30;

// Writes events while the writer holds less than kFloodQueued, then waits for it to drain.
void Flood(std::shared_ptr<http::ResponseWriter> w, std::shared_ptr<std::atomic<long long>> bytes) {
  static const std::string ev =
      api::FormatSse(Chunk(R"({"content":")" + std::string(16384, 'x') + R"("})"));
  while (!w->closed() && w->pending_bytes() < kFloodQueued && *bytes < kFloodTotal) {
    w->Write(ev);
    *bytes += static_cast<long long>(ev.size());
  }
  if (w->closed()) return;
  if (*bytes >= kFloodTotal) {
    w->Write(api::FormatSse("[DONE]"));
    return w->End();
  }
  auto* raw = w.get();
  raw->OnWritable(kFloodQueued / 4,
                  [w = std::move(w), bytes]() mutable { Flood(std::move(w), std::move(bytes)); });
}

}  // namespace

FaultUpstream::FaultUpstream(boost::asio::io_context& io, Fault fault) : fault_(fault) {
  http::ServerOptions options;
  options.port = 0;
  server_ = std::make_unique<http::Server>(io, options);
  auto handler = [this](http::Request r, std::shared_ptr<http::ResponseWriter> w) {
    Handle(std::move(r), std::move(w));
  };
  server_->Route("POST", "/v1/chat/completions", handler);
  server_->Route("POST", "/v1/completions", handler);
  server_->Route("GET", "/metrics", [this](http::Request, auto w) {
    if (fault_ == Fault::kMetricsFail) {
      return w->Send(500, "text/plain", "metrics exporter failed\n");
    }
    w->Send(200, "text/plain",
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running{model_name=\"m\"} 0\n");
  });
  auto bound = server_->Start();
  port_ = bound.ok() ? *bound : 0;
}

void FaultUpstream::Handle(http::Request r, std::shared_ptr<http::ResponseWriter> w) {
  ++requests_;
  if (fault_ == Fault::kHtml404) return w->Send(404, "text/html", kHtmlPage);
  if (fault_ == Fault::kProxyJson404) return w->Send(404, "application/json", kProxyJson);
  if (fault_ == Fault::kText429) return w->Send(429, "text/plain", "slow down");
  if (fault_ == Fault::kRateLimited429) {
    http::Headers h;
    h.Add("Retry-After", "7");
    h.Add("retry-after-ms", "6500");
    h.Add("x-should-retry", "true");
    h.Add("x-ratelimit-remaining-requests", "0");
    return w->Send(429, "application/json",
                   R"({"error":{"message":"Rate limit reached for requests","type":"requests",)"
                   R"("param":null,"code":"rate_limit_exceeded"}})",
                   std::move(h));
  }
  if (fault_ == Fault::kShortRateLimit429) {
    http::Headers h;
    h.Add("Retry-After", "2");
    return w->Send(429, "application/json",
                   R"({"error":{"message":"Rate limit reached for requests","type":"requests",)"
                   R"("param":null,"code":"rate_limit_exceeded"}})",
                   std::move(h));
  }
  if (fault_ == Fault::kBusy503) {
    http::Headers h;
    h.Add("Retry-After", "9");
    h.Add("retry-after-ms", "soon");
    return w->Send(503, "application/json",
                   std::string(R"({"error":{"message":"busy at )") + kLeakedAddress +
                       R"(","type":"server_error"}})",
                   std::move(h));
  }
  if (fault_ == Fault::kLeaky500) {
    return w->Send(500, "application/json",
                   std::string(R"({"error":{"message":"upstream )") + kLeakedAddress +
                       R"( rejected key )" + kLeakedKey + R"(","type":"server_error"}})");
  }
  auto counter = closed_;
  w->OnClose([counter] { ++*counter; });
  w->StartStream(200, "text/event-stream");
  w->Write(api::FormatSse(Chunk(R"({"role":"assistant","content":""})")));
  if (fault_ == Fault::kFlood) return Flood(std::move(w), bytes_);
  w->Write(api::FormatSse(Chunk(R"({"content":" a"})")));
  w->Write(api::FormatSse(Chunk("{}", "\"stop\"")));
  w->Write(api::FormatSse(
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[],)"
      R"("usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}})"));
  w->Write(api::FormatSse("[DONE]"));
  w->End();
}

}  // namespace kinference::gateway::testing
