// Tests of the engine's read-only oracle queries (PrefixCacheHitTokens,
// QueuedPrefillTokens, NumRunning) against what the scheduler then does.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace kinference::engine {
namespace {

using testing::Req;
using testing::RunToIdle;
using testing::TinyProfile;
using testing::Tokens;

TEST(EngineQueryTest, PrefixHitMatchesReportedCachedTokens) {
  Engine e(TinyProfile(1000));
  auto prompt = Tokens(1, 100);
  EXPECT_EQ(e.PrefixCacheHitTokens(prompt), 0);
  ASSERT_TRUE(e.AddRequest(Req("a", prompt, 2)).ok());
  RunToIdle(e, 0);
  // 100 tokens = 6 full blocks of 16 (96 tokens) cached after the first request.
  EXPECT_EQ(e.PrefixCacheHitTokens(prompt), 96);
  // A prompt extending it hits the same 96 tokens, and the engine reports exactly that.
  auto longer = prompt;
  auto extra = Tokens(2, 40);
  longer.insert(longer.end(), extra.begin(), extra.end());
  int predicted = e.PrefixCacheHitTokens(longer);
  EXPECT_EQ(predicted, 96);
  ASSERT_TRUE(e.AddRequest(Req("b", longer, 2, 10)).ok());
  auto log = RunToIdle(e, 10);
  EXPECT_EQ(log.finished.at("b").cached_tokens, predicted);
  // Capped so that one token is always computed: a 96-token prompt hits 80.
  std::vector<TokenId> exact(prompt.begin(), prompt.begin() + 96);
  EXPECT_EQ(e.PrefixCacheHitTokens(exact), 80);
}

TEST(EngineQueryTest, QueuedPrefillCountsUnscheduledAndPartialPrefills) {
  auto p = TinyProfile(1000);
  p.max_num_batched_tokens = 64;
  Engine e(p);
  EXPECT_EQ(e.QueuedPrefillTokens(), 0);
  ASSERT_TRUE(e.AddRequest(Req("a", Tokens(1, 100), 2)).ok());
  ASSERT_TRUE(e.AddRequest(Req("b", Tokens(2, 50), 2)).ok());
  EXPECT_EQ(e.QueuedPrefillTokens(), 150);
  EXPECT_EQ(e.NumRunning(), 0);
  ASSERT_TRUE(e.PlanStep(0).has_value());  // a: 64 of 100 tokens
  e.CompleteStep();
  EXPECT_EQ(e.NumRunning(), 1);
  EXPECT_EQ(e.QueuedPrefillTokens(), 36 + 50);
  RunToIdle(e, 1);
  EXPECT_EQ(e.QueuedPrefillTokens(), 0);
  EXPECT_EQ(e.NumRunning(), 0);
}

}  // namespace
}  // namespace kinference::engine
