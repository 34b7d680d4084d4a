// Cooldown (routing/router.h): an endpoint that asked for a wait (an upstream 429/503/529
// with Retry-After) is skipped until it passed; every healthy candidate cooling down is
// kResourceExhausted with the soonest end. Time is a ManualClock: nothing waits.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/clock.h"
#include "routing/router.h"

namespace kinference::routing {
namespace {

RequestFeatures Req(const std::string& id) {
  RequestFeatures f;
  f.request_id = id;
  f.model = "m";
  f.block_hashes = ChainedBlockHashes(std::string(1024, 'x'), 128);
  f.prompt_chars = 1024;
  return f;
}

class RouterCooldownTest : public ::testing::Test {
 protected:
  RouterCooldownTest() : router(RouterConfig{}) {
    router.AddEndpoint({"a", "m", "p"}, clock.Now());
    router.AddEndpoint({"b", "m", "p"}, clock.Now());
  }
  // The endpoints `n` round-robin picks choose now (round-robin alternates between every
  // candidate it is given, so both show unless one is left out).
  std::set<EndpointId> Picked(int n) {
    std::set<EndpointId> out;
    for (int i = 0; i < n; ++i) {
      auto d = router.Pick(Req("r" + std::to_string(next_++)), {}, "round-robin", clock.Now());
      EXPECT_TRUE(d.ok()) << d.status().message();
      if (d.ok()) out.insert(d->endpoint);
    }
    return out;
  }
  ManualClock clock{100};
  Router router;
  int next_ = 0;
};

TEST_F(RouterCooldownTest, CoolingEndpointIsSkippedUntilItsTimeHasPassed) {
  EXPECT_EQ(Picked(4), (std::set<EndpointId>{"a", "b"}));
  EXPECT_TRUE(router.CoolDown("a", clock.Now() + 2, clock.Now()));
  EXPECT_EQ(Picked(4), (std::set<EndpointId>{"b"}));
  clock.AdvanceTo(101.999);
  EXPECT_EQ(Picked(4), (std::set<EndpointId>{"b"}));
  EXPECT_EQ(router.CoolingUntil("a", clock.Now()), 102);
  clock.AdvanceTo(102);  // the wait has passed: picked again
  EXPECT_EQ(Picked(4), (std::set<EndpointId>{"a", "b"}));
  EXPECT_FALSE(router.CoolingUntil("a", clock.Now()));
}

TEST_F(RouterCooldownTest, EveryEndpointCoolingIsResourceExhaustedUntilTheSoonestEnd) {
  router.CoolDown("a", 130, clock.Now());
  router.CoolDown("b", 107, clock.Now());
  auto d = router.Pick(Req("r"), {}, "", clock.Now());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kResourceExhausted) << d.status().message();
  const EndpointId both[] = {"a", "b"};
  EXPECT_EQ(router.SoonestCooldownEnd(both, clock.Now()), 107);
  // Only among the candidates asked about, and only healthy ones.
  const EndpointId only_a[] = {"a"};
  EXPECT_EQ(router.SoonestCooldownEnd(only_a, clock.Now()), 130);
  router.SetHealthy("b", false);
  EXPECT_EQ(router.SoonestCooldownEnd(both, clock.Now()), 130);
  router.SetHealthy("b", true);
  clock.AdvanceTo(107);
  EXPECT_EQ(Picked(3), (std::set<EndpointId>{"b"}));
  EXPECT_EQ(router.SoonestCooldownEnd(both, clock.Now()), 130);
}

TEST_F(RouterCooldownTest, UnhealthyEndpointsAreStillUnavailableNotCooling) {
  router.SetHealthy("a", false);
  router.CoolDown("b", 110, clock.Now());
  auto d = router.Pick(Req("r"), {}, "", clock.Now());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kResourceExhausted);  // b is healthy, waiting
  router.SetHealthy("b", false);
  d = router.Pick(Req("r"), {}, "", clock.Now());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kUnavailable);  // none healthy at all
}

TEST_F(RouterCooldownTest, ALaterWaitExtendsACooldownAndAnEarlierOneNeverShortensIt) {
  EXPECT_TRUE(router.CoolDown("a", 105, clock.Now()));
  EXPECT_FALSE(router.CoolDown("a", 110, clock.Now()));  // extended, not a new one
  EXPECT_EQ(router.CoolingUntil("a", clock.Now()), 110);
  EXPECT_FALSE(router.CoolDown("a", 103, clock.Now()));
  EXPECT_EQ(router.CoolingUntil("a", clock.Now()), 110);
  // A wait that has already passed (Retry-After: 0, a date in the past) starts nothing.
  EXPECT_FALSE(router.CoolDown("b", clock.Now(), clock.Now()));
  EXPECT_FALSE(router.CoolingUntil("b", clock.Now()));
  EXPECT_FALSE(router.CoolDown("unknown", 200, clock.Now()));
  clock.AdvanceTo(110);
  EXPECT_TRUE(router.CoolDown("a", 111, clock.Now()));  // over: the next is a new one
}

TEST_F(RouterCooldownTest, EachEndedCooldownIsReportedOnce) {
  router.CoolDown("a", 102, clock.Now());
  router.CoolDown("b", 104, clock.Now());
  EXPECT_TRUE(router.CooldownsEnded(clock.Now()).empty());
  clock.AdvanceTo(103);
  EXPECT_EQ(router.CooldownsEnded(clock.Now()), std::vector<EndpointId>{"a"});
  EXPECT_TRUE(router.CooldownsEnded(clock.Now()).empty());
  clock.AdvanceTo(200);
  EXPECT_EQ(router.CooldownsEnded(clock.Now()), std::vector<EndpointId>{"b"});
  EXPECT_TRUE(router.CooldownsEnded(clock.Now()).empty());
}

TEST_F(RouterCooldownTest, ScoreLeavesCoolingEndpointsOutAsUnhealthyOnes) {
  router.CoolDown("a", 110, clock.Now());
  const EndpointId both[] = {"a", "b"};
  auto scores = router.Score(Req("r"), both, clock.Now());
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_EQ(scores[0].endpoint, "b");
  clock.AdvanceTo(110);
  EXPECT_EQ(router.Score(Req("r"), both, clock.Now()).size(), 2u);
}

// Strategies that remember where a request went (sticky, prefix) still move off a cooling
// endpoint: the prefix strategy sends a prompt cached on `a` to `b` while `a` cools down.
TEST_F(RouterCooldownTest, CachedPromptGoesElsewhereWhileItsEndpointCoolsDown) {
  const EndpointId only_a[] = {"a"};
  RequestFeatures f = Req("warm");
  auto d = router.Pick(f, only_a, "prefix", clock.Now());
  ASSERT_TRUE(d.ok());
  router.OnDispatched(f, *d, clock.Now());
  router.OnFinished("warm", Usage{256, 0, 4}, Outcome::kSuccess, clock.Now());
  auto again = router.Pick(Req("next"), {}, "prefix", clock.Now());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->endpoint, "a");  // cached there
  router.CoolDown("a", 105, clock.Now());
  again = router.Pick(Req("next"), {}, "prefix", clock.Now());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->endpoint, "b");
}

}  // namespace
}  // namespace kinference::routing
