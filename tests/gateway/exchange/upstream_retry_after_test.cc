// An upstream asking the client to wait (429, 503 with Retry-After / retry-after-ms,
// docs/reliability.md "Upstream errors"): what the client gets on each front, when the
// gateway relays the error and when it retries another endpoint itself.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

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
};

// A 429 is the upstream's own answer to relay, not a failure to retry elsewhere: each
// front gets it once, with the upstream's Retry-After, retry-after-ms and x-should-retry
// (what the SDKs time their retry by), but not its x-ratelimit-* (the gateway's account).
TEST_F(UpstreamRetryAfterTest, RateLimitIsRelayedOnceWithTheUpstreamsRetryAfter) {
  StartWith({Fault::kRateLimited429});
  for (const auto& [path, body] :
       std::vector<std::pair<std::string, std::string>>{{"/v1/chat/completions", kChat},
                                                        {"/v1/chat/completions", kStreamChat},
                                                        {"/v1/messages", kMessages}}) {
    auto r = Post(body, {}, path);
    EXPECT_EQ(r.status, 429) << path << r.body;
    EXPECT_EQ(r.headers.Find("retry-after"), "7") << path;
    EXPECT_EQ(r.headers.Find("retry-after-ms"), "6500") << path;
    EXPECT_EQ(r.headers.Find("x-should-retry"), "true") << path;
    EXPECT_EQ(r.headers.Find("x-ratelimit-remaining-requests"), "") << path;
    const json::value v = json::parse(r.body);
    const auto& type = path == "/v1/messages" ? v.at("error").at("type") : v.at("error").at("code");
    EXPECT_EQ(type, path == "/v1/messages" ? "rate_limit_error" : "rate_limit_exceeded") << r.body;
  }
  EXPECT_EQ(Requests(), 3);  // never retried
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
// Retry-After (until the ejection ends), not the upstream's.
TEST_F(UpstreamRetryAfterTest, RetryWithNoEndpointLeftGivesTheGatewaysOwnRetryAfter) {
  StartWith({Fault::kBusy503});
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.headers.Find("retry-after"), "1");  // the first ejection lasts 1 s
  EXPECT_EQ(Requests(), 1);
}

}  // namespace
}  // namespace kinference::gateway
