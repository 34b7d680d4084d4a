// Per-policy counters (kinference_policy_decisions_total) count requests, not endpoints.
#include "policy_fixture.h"

namespace kinference::gateway {
namespace {

using namespace policy_testing;  // NOLINT: the shared fixture and helpers

// Counters are per request: "removed" once per request however many endpoints a policy
// removed; a rejected request counts as "matched" for the policies that matched.
TEST_F(PolicyProxyTest, CountersArePerRequest) {
  FakeUpstream& local = Fake();
  FakeUpstream& ext1 = Fake();
  FakeUpstream& ext2 = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddPool(c, "local", "m", local);
  AddProvider(c, "ext1", "m", ext1);
  AddProvider(c, "ext2", "m", ext2);
  Start(c);
  ASSERT_EQ(Post(Chat("m", "mail bob@example.org")).status, 200);
  EXPECT_EQ(Decisions().back().at("removed").as_array().size(), 2u);
  EXPECT_EQ(PolicyCount("pii-local-only", "removed"), 1);
  EXPECT_EQ(PolicyCount("pii-local-only", "matched"), 1);
}

TEST_F(PolicyProxyTest, RejectedRequestsCountAsMatched) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  EXPECT_EQ(Post(Chat("m", "mail bob@example.org")).status, 403);
  EXPECT_EQ(PolicyCount("pii-local-only", "rejected"), 1);
  EXPECT_EQ(PolicyCount("pii-local-only", "matched"), 1);
  EXPECT_EQ(Decisions().back().at("rejected_by").as_string(), "pii-local-only");
}

}  // namespace
}  // namespace kinference::gateway
