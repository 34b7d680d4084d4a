// The fault matrix (docs/reliability.md) against the process users run: one
// `kinference engine-sim` with fault injection (src/enginesim/faults.h) behind an
// in-process gateway. One test per fault: what the client sees, that the request is
// counted once (kinference_requests_total, token counters), and that nothing of the
// upstream's leaks (its words, a key, an internal address). Waits are hang guards, never
// timing assertions.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway/gateway.h"
#include "gateway_harness.h"
#include "testing/launch.h"
#include "testing/wire.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::ChildProcess;
using kinference::testing::LaunchKinference;
using kinference::testing::SseEvents;
using testing::Eventually;

// What engine-sim's 5xx fault quotes (enginesim/faults.h kFaultSecret, kFaultAddress).
constexpr const char* kFaultSecret = "sk-enginesim-fault";
constexpr const char* kFaultAddress = "10.203.0.7";
// engine-sim runs 20x faster than real time; the gateway's model seconds match.
constexpr double kTimeScale = 20;

const std::string kChat =
    R"({"model":"m","max_tokens":16,"ignore_eos":true,"messages":[{"role":"user","content":"hello"}]})";
const std::string kStreamChat = R"({"model":"m","max_tokens":16,"ignore_eos":true,"stream":true,)"
                                R"("messages":[{"role":"user","content":"hello"}]})";

class FaultMatrixTest : public testing::GatewayHarness {
 protected:
  // One engine-sim started with `flags`, the pool's only endpoint ("p/0"), and the gateway.
  void StartWith(std::vector<std::string> flags, double request_timeout_s = 600) {
    std::vector<std::string> args{"engine-sim",          "--port", "0", "--time-scale", "20",
                                  "--served-model-name", "m"};
    args.insert(args.end(), flags.begin(), flags.end());
    sim_ = LaunchKinference(args);
    ASSERT_TRUE(sim_) << "engine-sim did not start";
    GatewayConfig c;
    c.time_scale = kTimeScale;
    c.scrape_interval_s = 0.2 * kTimeScale;  // 0.2 s wall
    c.request_timeout_s = request_timeout_s;
    PoolConfig pool{"p", "m", {}};
    pool.endpoints.push_back(
        ParseEndpointUrl("http://127.0.0.1:" + std::to_string(sim_->port()), "test"));
    c.pools.push_back(pool);
    Start(c);
  }
  // The sum of every exposed series starting with `prefix`.
  double Sum(const std::string& prefix) {
    std::istringstream text(Call("GET", "/metrics").body);
    double sum = 0;
    for (std::string line; std::getline(text, line);) {
      if (line.starts_with(prefix)) sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return sum;
  }
  // Counted once: exactly one request across every series, under `outcome` (the endpoint
  // is "none" when the last attempt found no endpoint left to try).
  void ExpectCountedOnceAs(const std::string& outcome) {
    EXPECT_EQ(Sum("kinference_requests_total{"), 1);
    std::istringstream text(Call("GET", "/metrics").body);
    double n = 0;
    for (std::string line; std::getline(text, line);) {
      if (line.starts_with("kinference_requests_total{") &&
          line.find("outcome=\"" + outcome + "\"") != std::string::npos)
        n += std::stod(line.substr(line.rfind(' ') + 1));
    }
    EXPECT_EQ(n, 1) << Call("GET", "/metrics").body;
  }
  void ExpectNoLeak(const std::string& body) {
    EXPECT_EQ(body.find(kFaultSecret), std::string::npos) << body;
    EXPECT_EQ(body.find(kFaultAddress), std::string::npos) << body;
    EXPECT_EQ(body.find("127.0.0.1"), std::string::npos) << body;
    EXPECT_EQ(body.find("engine failed"), std::string::npos) << body;
  }

  std::unique_ptr<ChildProcess> sim_;
};

// 5xx with a key and an address in its message: the endpoint is ejected at once and the
// retry finds nothing left, so 503 + Retry-After with the gateway's message (upstream
// status class, request id); counted once as an error.
TEST_F(FaultMatrixTest, ServerErrorIs503WithTheGatewaysWords) {
  StartWith({"--fault", "5xx"});
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_FALSE(r.headers.Find("retry-after").empty());
  ExpectNoLeak(r.body);
  std::string message(json::parse(r.body).at("error").at("message").as_string());
  EXPECT_NE(message.find("upstream status 5xx"), std::string::npos) << message;
  EXPECT_NE(message.find("request id"), std::string::npos) << message;
  ExpectCountedOnceAs("error");
  EXPECT_EQ(Metric("kinference_endpoint_ejections_total{endpoint=\"p/0\"}"), 1);
}

// The connection closed without an answer: 503 naming no address; counted once.
TEST_F(FaultMatrixTest, ResetIs503WithoutAnAddress) {
  StartWith({"--fault", "reset"});
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503) << r.body;
  ExpectNoLeak(r.body);
  EXPECT_NE(r.body.find("request id"), std::string::npos) << r.body;
  ExpectCountedOnceAs("error");
}

// The process dies after 2 tokens of a stream: the client gets the tokens so far, then
// an SSE error event and no [DONE]; counted once as an error.
TEST_F(FaultMatrixTest, CrashMidStreamEndsTheStreamWithAnErrorEvent) {
  StartWith({"--fault", "crash-mid-stream", "--fault-after-tokens", "2"});
  auto r = Post(kStreamChat);
  EXPECT_EQ(r.status, 200) << r.body;
  auto events = SseEvents(r.body);
  ASSERT_GE(events.size(), 2u) << r.body;
  int content = 0;
  for (const auto& e : events) content += e.find("\"content\":\"") != std::string::npos;
  EXPECT_GE(content, 1) << r.body;
  EXPECT_NE(events.back().find("\"error\""), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos) << r.body;
  ExpectNoLeak(r.body);
  ExpectCountedOnceAs("error");
  EXPECT_TRUE(Eventually([&] { return !sim_->Running(); })) << "engine-sim did not exit";
}

// The first byte comes late (1 s wall): the client waits and gets the whole answer;
// counted once as a success, its TTFT observed once.
TEST_F(FaultMatrixTest, SlowFirstByteIsServedInFull) {
  StartWith({"--fault", "slow-first-byte", "--fault-delay-s", "1"});
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body).at("usage").at("completion_tokens"), 16);
  ExpectCountedOnceAs("success");
  EXPECT_EQ(Metric("kinference_time_to_first_token_seconds_count{model=\"m\"}"), 1);
  EXPECT_EQ(Sum("kinference_completion_tokens_total{"), 16);
}

// The stream stops after 2 tokens and the connection stays open: request_timeout_s (40
// model s, 2 s wall) ends it with an SSE error event; counted once as an error.
TEST_F(FaultMatrixTest, StalledStreamEndsAtTheRequestTimeout) {
  StartWith({"--fault", "stall", "--fault-after-tokens", "2"}, /*request_timeout_s=*/40);
  auto r = Post(kStreamChat);
  EXPECT_EQ(r.status, 200) << r.body;
  auto events = SseEvents(r.body);
  ASSERT_FALSE(events.empty()) << r.body;
  auto err = json::parse(events.back());
  EXPECT_NE(std::string(err.at("error").at("message").as_string()).find("request timeout"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos) << r.body;
  ExpectCountedOnceAs("error");
}

// Impossible usage (prompt_tokens 2^40, completion_tokens -7, cached above prompt): the
// client gets its answer; the gateway's token counters take nothing from it rather than
// jump by 2^40 or go down.
TEST_F(FaultMatrixTest, WrongUsageIsNotCounted) {
  StartWith({"--fault", "wrong-usage"});
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectCountedOnceAs("success");
  EXPECT_EQ(Sum("kinference_prompt_tokens_total{"), 0);
  EXPECT_EQ(Sum("kinference_completion_tokens_total{"), 0);
  EXPECT_EQ(Sum("kinference_cached_tokens_total{"), 0);
  // (SlowFirstByteIsServedInFull shows the same counters taking honest usage.)
}

// /metrics answers 500 while inference works: the endpoint's metrics go stale, it stays
// routable (not ejected) and serves.
TEST_F(FaultMatrixTest, FailingMetricsMarkStaleAndKeepServing) {
  StartWith({"--fault-metrics", "fail"});
  EXPECT_TRUE(Eventually(
      [&] { return Metric("kinference_endpoint_metrics_stale{endpoint=\"p/0\"}") == 1; }));
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectCountedOnceAs("success");
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"p/0\"}"), 1);
  EXPECT_EQ(Metric("kinference_endpoint_ejections_total{endpoint=\"p/0\"}"), 0);
}

// /metrics answers after 3 s, past the scrape's timeout (1 s): stale, not ejected, serves.
TEST_F(FaultMatrixTest, SlowMetricsMarkStaleAndKeepServing) {
  StartWith({"--fault-metrics", "slow", "--fault-delay-s", "3"});
  EXPECT_TRUE(Eventually(
      [&] { return Metric("kinference_endpoint_metrics_stale{endpoint=\"p/0\"}") == 1; }));
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectCountedOnceAs("success");
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"p/0\"}"), 1);
}

}  // namespace
}  // namespace kinference::gateway
