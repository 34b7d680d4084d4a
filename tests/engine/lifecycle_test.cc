// Request life cycle of the engine model: validation, front-end delay, abort, EOS.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace kinference::engine {
namespace {

using testing::Req;
using testing::RunToIdle;
using testing::TinyProfile;
using testing::Tokens;

TEST(Validation, RejectsBadRequests) {
  auto p = TinyProfile(100);  // 1,600 tokens of KV
  p.max_model_len = 1000;
  Engine e(p);
  EXPECT_EQ(e.AddRequest(Req("empty", {}, 4)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.AddRequest(Req("zero", Tokens(1, 8), 0)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.AddRequest(Req("long", Tokens(1, 990), 11)).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(e.AddRequest(Req("fits", Tokens(1, 990), 10)).ok());
  EXPECT_EQ(e.AddRequest(Req("fits", Tokens(1, 8), 1)).code(), ErrorCode::kInvalidArgument);
  auto small = TinyProfile(2);  // 32 tokens of KV
  Engine e2(small);
  Status s = e2.AddRequest(Req("big", Tokens(1, 30), 3));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.param(), "max_tokens");
  EXPECT_FALSE(e2.HasWork());
}

TEST(Validation, UnknownProfileIsNotFound) {
  EXPECT_EQ(ProfileByName("tpu-v9").status().code(), ErrorCode::kNotFound);
  for (const auto& name : ProfileNames()) {
    auto p = ProfileByName(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ(p->name, name);
    EXPECT_GT(p->num_gpu_blocks, 0);
  }
}

TEST(FrontendDelay, RequestWaitsForItsFrontEndTime) {
  auto p = TinyProfile(100);
  p.frontend_s_per_prompt_token = 0.001;
  Engine e(p);
  ASSERT_TRUE(e.AddRequest(Req("a", Tokens(1, 100), 1, /*arrival=*/1.0)).ok());
  EXPECT_TRUE(e.HasWork());
  EXPECT_FALSE(e.PlanStep(1.0).has_value());
  EXPECT_EQ(e.metrics().num_requests_waiting, 0);  // still in the front end, as on vLLM
  ASSERT_TRUE(e.NextReadyTime().has_value());
  EXPECT_DOUBLE_EQ(*e.NextReadyTime(), 1.1);
  EXPECT_FALSE(e.PlanStep(1.09).has_value());
  auto d = e.PlanStep(1.1);
  ASSERT_TRUE(d.has_value());
  EXPECT_NEAR(*d, 0.01 + 0.1, 1e-12);
  StepOutput out = e.CompleteStep();
  ASSERT_EQ(out.finished.size(), 1u);
  const auto& f = out.finished[0];
  EXPECT_DOUBLE_EQ(f.first_scheduled, 1.1);
  EXPECT_NEAR(f.first_token - f.arrival, 0.1 + 0.11, 1e-9);  // TTFT includes the front end
  EXPECT_EQ(e.metrics().request_queue_time_seconds.count, 1u);
  EXPECT_NEAR(e.metrics().request_queue_time_seconds.sum, 0.0, 1e-12);
}

TEST(Abort, RunningRequestFreesBlocksAndIsReportedNextStep) {
  Engine e(TinyProfile(100));
  ASSERT_TRUE(e.AddRequest(Req("a", Tokens(1, 100), 50)).ok());
  ASSERT_TRUE(e.PlanStep(0).has_value());
  StepOutput first = e.CompleteStep();
  EXPECT_EQ(first.tokens.size(), 1u);
  EXPECT_GT(e.metrics().kv_cache_usage_perc, 0.0);
  e.Abort("a");
  e.Abort("a");        // twice: still one report
  e.Abort("unknown");  // ignored
  EXPECT_DOUBLE_EQ(e.metrics().kv_cache_usage_perc, 0.0);
  EXPECT_TRUE(e.HasWork());
  auto d = e.PlanStep(first.end);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, 0.0);
  StepOutput out = e.CompleteStep();
  ASSERT_EQ(out.finished.size(), 1u);
  EXPECT_EQ(out.finished[0].reason, FinishReason::kAbort);
  EXPECT_EQ(out.finished[0].completion_tokens, 1);
  EXPECT_TRUE(out.tokens.empty());
  EXPECT_FALSE(e.HasWork());
  EXPECT_EQ(e.metrics().request_success_abort, 1u);
}

TEST(Abort, BetweenPlanAndCompleteTakesEffectAtCompletion) {
  Engine e(TinyProfile(100));
  ASSERT_TRUE(e.AddRequest(Req("a", Tokens(1, 40), 50)).ok());
  ASSERT_TRUE(e.AddRequest(Req("b", Tokens(2, 40), 50)).ok());
  ASSERT_TRUE(e.PlanStep(0).has_value());
  e.Abort("a");
  StepOutput out = e.CompleteStep();
  ASSERT_EQ(out.finished.size(), 1u);
  EXPECT_EQ(out.finished[0].request_id, "a");
  EXPECT_EQ(out.finished[0].reason, FinishReason::kAbort);
  ASSERT_EQ(out.tokens.size(), 1u);
  EXPECT_EQ(out.tokens[0].request_id, "b");
  EXPECT_EQ(e.metrics().num_requests_running, 1);
  auto log = RunToIdle(e, out.end);
  EXPECT_EQ(log.finished.at("b").completion_tokens, 50);
  EXPECT_DOUBLE_EQ(e.metrics().kv_cache_usage_perc, 0.0);
}

TEST(Abort, WaitingRequestNeverScheduled) {
  auto p = TinyProfile(100);
  p.frontend_s_per_prompt_token = 1.0;
  Engine e(p);
  ASSERT_TRUE(e.AddRequest(Req("a", Tokens(1, 10), 5)).ok());
  e.Abort("a");
  auto log = RunToIdle(e, 0);
  ASSERT_EQ(log.finished.size(), 1u);
  EXPECT_EQ(log.finished.at("a").reason, FinishReason::kAbort);
  EXPECT_EQ(log.finished.at("a").completion_tokens, 0);
  EXPECT_TRUE(log.tokens.empty());
}

TEST(Eos, StopPositionIsDeterministicAndWithinMaxTokens) {
  int stops = 0;
  double stop_sum = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    int counts[2];
    for (int run = 0; run < 2; ++run) {
      Engine e(TinyProfile(100));
      ASSERT_TRUE(e.AddRequest(Req("a", Tokens(1, 10), 1500, 0, /*ignore_eos=*/false, seed)).ok());
      auto log = RunToIdle(e, 0);
      const auto& f = log.finished.at("a");
      counts[run] = f.completion_tokens;
      EXPECT_GE(f.completion_tokens, 1);
      EXPECT_LE(f.completion_tokens, 1500);
      EXPECT_EQ(f.reason,
                f.completion_tokens == 1500 ? FinishReason::kLength : FinishReason::kStop);
      if (f.reason == FinishReason::kStop) {
        ++stops;
        stop_sum += f.completion_tokens;
      }
    }
    EXPECT_EQ(counts[0], counts[1]);
  }
  // Natural reply lengths are exponential with mean 343 tokens: nearly all of the 40 runs
  // stop before 1,500 tokens, and their mean lies near 343.
  EXPECT_GE(stops, 36);
  EXPECT_GT(stop_sum / stops, 150);
  EXPECT_LT(stop_sum / stops, 700);
}

TEST(Eos, CapAtMaxTokensReportsLength) {
  int lengths = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Engine e(TinyProfile(100));
    ASSERT_TRUE(e.AddRequest(Req("a", Tokens(1, 10), 5, 0, /*ignore_eos=*/false, seed)).ok());
    auto log = RunToIdle(e, 0);
    lengths += log.finished.at("a").reason == FinishReason::kLength;
  }
  EXPECT_GE(lengths, 18);  // P(EOS within 5 tokens) is about 1.5%
}

TEST(Output, TokensFollowTheSyntheticWordStream) {
  Engine e(TinyProfile(100));
  ASSERT_TRUE(e.AddRequest(Req("a", Tokens(1, 10), 5, 0, true, /*seed=*/42)).ok());
  auto log = RunToIdle(e, 0);
  const auto& toks = log.tokens.at("a");
  ASSERT_EQ(toks.size(), 5u);
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(toks[k].text, " " + SyntheticWord(42, k));
    EXPECT_EQ(Tokenize(toks[k].text), std::vector<TokenId>{toks[k].token});
  }
  EXPECT_EQ(e.metrics().generation_tokens_total, 5u);
  EXPECT_EQ(e.metrics().prompt_tokens_total, 10u);
  EXPECT_EQ(e.metrics().inter_token_latency_seconds.count, 4u);
}

}  // namespace
}  // namespace kinference::engine
