// An upstream asking the client to wait (429, 503 with Retry-After / retry-after-ms,
// docs/reliability.md "Upstream errors", "Cooldown"): what the client gets on each front,
// when the gateway relays the error, when it retries another endpoint itself, and how
// the endpoint is skipped until the wait has passed.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fake_upstream.h"
#include "fault_upstream.h"
#include "gateway/gateway.h"
#include "gateway_harness.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using testing::Fault;
using testing::FaultUpstream;
using testing::kChat;
using testing::kMessages;
using testing::kStreamChat;

class UpstreamRetryAfterTest : public testing::GatewayHarness {
 protected:
  // A pool "p" serving "m" from one upstream per fault.
  void StartWith(const std::vector<Fault>& faults) {
    GatewayConfig c;
    PoolConfig pool{"p", "m", {}};
    for (Fault f : faults) {
      ups_.push_back(std::make_unique<FaultUpstream>(io(), f));
      FaultUpstream* up = ups_.back().get();
      OnStop([up] { up->Stop(); });
      pool.endpoints.push_back(
          ParseEndpointUrl("http://127.0.0.1:" + std::to_string(up->port()), "test"));
    }
    c.pools.push_back(pool);
    Start(c);
  }
  int Requests() const {
    int n = 0;
    for (const auto& u : ups_) n += u->requests();
    return n;
  }
  std::vector<std::unique_ptr<FaultUpstream>> ups_;
  std::unique_ptr<testing::FakeUpstream> fine_;  // a replica answering like vLLM
};

// A 429 is the upstream's own answer to relay, not a failure to retry elsewhere: each
// front gets it once, with the upstream's Retry-After, retry-after-ms and x-should-retry
// (what the SDKs time their retry by), but not its x-ratelimit-* (the gateway's account).
// One gateway per front: after the 429 the endpoint cools down (next test).
class UpstreamRetryAfterFrontTest
    : public UpstreamRetryAfterTest,
      public ::testing::WithParamInterface<std::pair<std::string, std::string>> {};

TEST_P(UpstreamRetryAfterFrontTest, RateLimitIsRelayedOnceWithTheUpstreamsRetryAfter) {
  StartWith({Fault::kRateLimited429});
  const auto& [path, body] = GetParam();
  auto r = Post(body, {}, path);
  EXPECT_EQ(r.status, 429) << path << r.body;
  EXPECT_EQ(r.headers.Find("retry-after"), "7") << path;
  EXPECT_EQ(r.headers.Find("retry-after-ms"), "6500") << path;
  EXPECT_EQ(r.headers.Find("x-should-retry"), "true") << path;
  EXPECT_EQ(r.headers.Find("x-ratelimit-remaining-requests"), "") << path;
  const json::value v = json::parse(r.body);
  const auto& type = path == "/v1/messages" ? v.at("error").at("type") : v.at("error").at("code");
  EXPECT_EQ(type, path == "/v1/messages" ? "rate_limit_error" : "rate_limit_exceeded") << r.body;
  EXPECT_EQ(Requests(), 1);  // never retried
}

INSTANTIATE_TEST_SUITE_P(
    Fronts, UpstreamRetryAfterFrontTest,
    ::testing::Values(std::pair<std::string, std::string>{"/v1/chat/completions", kChat},
                      std::pair<std::string, std::string>{"/v1/chat/completions", kStreamChat},
                      std::pair<std::string, std::string>{"/v1/messages", kMessages}));

// Cooldown: after the 429 the endpoint asked for 6.5 s (retry-after-ms), so the next
// requests are refused by the gateway itself without calling it, with Retry-After until
// it is back: 429 rate_limit_error on the OpenAI front, Anthropic's 529 overloaded_error
// on /v1/messages (as a full pool's refusal). Shown in /metrics and /debug/endpoints.
TEST_F(UpstreamRetryAfterTest, OnlyEndpointCoolingDownIsNotCalledAndTheGatewayAnswersTheWait) {
  StartWith({Fault::kRateLimited429});
  ASSERT_EQ(Post(kChat).status, 429);
  ASSERT_EQ(Requests(), 1);
  auto r = Post(kStreamChat);
  EXPECT_EQ(r.status, 429) << r.body;
  const int wait = std::stoi(std::string(r.headers.Find("retry-after")));
  EXPECT_GE(wait, 1);
  EXPECT_LE(wait, 7);                               // what is left of the 6.5 s, rounded up
  EXPECT_EQ(r.headers.Find("x-should-retry"), "");  // the gateway's own answer
  EXPECT_EQ(json::parse(r.body).at("error").at("type"), "rate_limit_error") << r.body;
  auto m = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(m.status, 529) << m.body;
  EXPECT_NE(m.headers.Find("retry-after"), "");
  EXPECT_EQ(json::parse(m.body).at("error").at("type"), "overloaded_error") << m.body;
  EXPECT_EQ(Requests(), 1);  // the upstream was not called again
  EXPECT_EQ(Metric("kinference_endpoint_cooling_down{endpoint=\"p/0\"}"), 1);
  EXPECT_EQ(Metric("kinference_endpoint_cooldowns_total{endpoint=\"p/0\"}"), 1);
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"none\",strategy=\"predicted-ttft\","
                   "outcome=\"overloaded\"}"),
            2);
  const json::value eps = json::parse(Call("GET", "/debug/endpoints").body);
  const json::object& ep = eps.at("endpoints").at(0).as_object();
  EXPECT_EQ(ep.at("cooling_down"), true);
  EXPECT_GT(ep.at("cooldown_remaining_s").to_number<double>(), 0);
  EXPECT_LE(ep.at("cooldown_remaining_s").to_number<double>(), 6.5);
  EXPECT_EQ(ep.at("healthy"), true);  // a cooldown is not ill health
}

// Two replicas, round-robin: the one answering 429 with Retry-After: 2 is skipped by the
// next requests, which go to the other, and picked again once the 2 s have passed. No
// time bound is assumed: a request answered within 2 s of the 429's request being sent
// was routed within the cooldown and must have gone to the other replica; one that went
// to the rate-limited replica again must have been answered 2 s or more after.
TEST_F(UpstreamRetryAfterTest, RateLimitedReplicaIsSkippedUntilItsRetryAfterHasPassed) {
  ups_.push_back(std::make_unique<FaultUpstream>(io(), Fault::kShortRateLimit429));
  FaultUpstream* limited = ups_.back().get();
  fine_ = std::make_unique<testing::FakeUpstream>(io(), testing::FakeMode::kOk);
  testing::FakeUpstream* fine = fine_.get();
  OnStop([limited, fine] {
    limited->Stop();
    fine->Stop();
  });
  GatewayConfig c;
  c.strategy = "round-robin";
  PoolConfig pool{"p", "m", {}};
  pool.endpoints.push_back(
      ParseEndpointUrl("http://127.0.0.1:" + std::to_string(limited->port()), "test"));
  pool.endpoints.push_back(
      ParseEndpointUrl("http://127.0.0.1:" + std::to_string(fine->port()), "test"));
  c.pools.push_back(pool);
  Start(c);
  using Clock = std::chrono::steady_clock;
  // Round-robin reaches the limited replica within two requests.
  Clock::time_point sent;
  for (int i = 0; i < 2 && limited->requests() == 0; ++i) {
    sent = Clock::now();
    auto r = Post(kChat);
    if (limited->requests() == 1) {
      EXPECT_EQ(r.status, 429) << r.body;
      EXPECT_EQ(r.headers.Find("retry-after"), "2");
    } else {
      EXPECT_EQ(r.status, 200) << r.body;
    }
  }
  ASSERT_EQ(limited->requests(), 1);
  int within_cooldown = 0;
  // Until the limited replica is picked again (30 s: a hang guard, not a bound).
  for (int i = 0; i < 3000 && limited->requests() == 1; ++i) {
    auto r = Post(kChat);
    const double since = std::chrono::duration<double>(Clock::now() - sent).count();
    if (r.headers.Find("x-kinference-endpoint") == "p/0") {
      EXPECT_GE(since, 2.0) << "picked again " << since << " s after its 429's request";
      break;
    }
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "p/1");
    if (since < 2.0) ++within_cooldown;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(limited->requests(), 2) << "never picked again after its Retry-After";
  EXPECT_GT(within_cooldown, 0) << "no request was routed within the cooldown";
  // Each 429 with its Retry-After started one (the second answer asked for 2 s more).
  EXPECT_EQ(Metric("kinference_endpoint_cooldowns_total{endpoint=\"p/0\"}"), 2);
}

// A 503 is retried on the other endpoint first (its Retry-After is not the client's); the
// last endpoint's 503 is what the client gets, with that endpoint's Retry-After (its
// unparsable retry-after-ms dropped): 503 on the OpenAI front.
TEST_F(UpstreamRetryAfterTest, RetriedBusyUpstreamRelaysTheLastRetryAfter) {
  StartWith({Fault::kBusy503, Fault::kBusy503});
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.headers.Find("retry-after"), "9");
  EXPECT_EQ(r.headers.Find("retry-after-ms"), "");
  EXPECT_EQ(r.body.find(testing::kLeakedAddress), std::string::npos) << r.body;
  EXPECT_EQ(Requests(), 2);
}

// The same on /v1/messages: Anthropic's overload, 529 overloaded_error, with the wait.
TEST_F(UpstreamRetryAfterTest, BusyUpstreamIsAnthropicOverloadWithItsRetryAfter) {
  StartWith({Fault::kBusy503, Fault::kBusy503});
  auto r = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(r.status, 529) << r.body;
  EXPECT_EQ(r.headers.Find("retry-after"), "9");
  const json::value v = json::parse(r.body);
  EXPECT_EQ(v.at("type"), "error");
  EXPECT_EQ(v.at("error").at("type"), "overloaded_error") << r.body;
  EXPECT_EQ(r.body.find(testing::kLeakedAddress), std::string::npos) << r.body;
  EXPECT_EQ(Requests(), 2);
}

// With one endpoint the retry finds it ejected: the client gets the gateway's own
// Retry-After, until the endpoint may take requests again: the later of its ejection's
// end (1 s, the first) and its cooldown's (its Retry-After: 9 s).
TEST_F(UpstreamRetryAfterTest, RetryWithNoEndpointLeftGivesTheGatewaysOwnRetryAfter) {
  StartWith({Fault::kBusy503});
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503) << r.body;
  const int wait = std::stoi(std::string(r.headers.Find("retry-after")));
  EXPECT_GT(wait, 1);  // not only the ejection's 1 s
  EXPECT_LE(wait, 9);
  EXPECT_EQ(Requests(), 1);
}

// A provider alone retries on itself before the first byte; not when its 503 asked for a
// wait: it is cooling down, so the client gets the 503 (with the wait) after one call.
TEST_F(UpstreamRetryAfterTest, ProviderCoolingDownIsNotRetriedOnItself) {
  ups_.push_back(std::make_unique<FaultUpstream>(io(), Fault::kBusy503));
  FaultUpstream* up = ups_.back().get();
  OnStop([up] { up->Stop(); });
  setenv("KINFERENCE_TEST_PROVIDER_KEY", "sk-test", 1);
  ProviderConfig p;
  p.name = "busy";
  p.model = "m";
  p.serves_model = "m";
  p.base_url = "http://127.0.0.1:" + std::to_string(up->port()) + "/v1";
  p.tls = false;
  p.host = "127.0.0.1";
  p.port = up->port();
  p.base_path = "/v1";
  p.api_key_env = "KINFERENCE_TEST_PROVIDER_KEY";
  p.retries_before_first_byte = 2;
  GatewayConfig c;
  c.providers.push_back(p);
  Start(c);
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503) << r.body;
  const int wait = std::stoi(std::string(r.headers.Find("retry-after")));
  EXPECT_GE(wait, 1);
  EXPECT_LE(wait, 9);
  EXPECT_EQ(Requests(), 1);  // not retried on itself while it asked to wait
}

}  // namespace
}  // namespace kinference::gateway
