// Calibration of the l40s-27b-fp8 profile against the published light-load measurements
// it was fitted to (see src/engine/profile.cc), plus sanity of the h100 scaling.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace kinference::engine {
namespace {

using testing::Req;
using testing::RunToIdle;
using testing::Tokens;

HardwareProfile Profile(const char* name) {
  auto p = ProfileByName(name);
  EXPECT_TRUE(p.ok());
  return *p;
}

double UncachedTtft(const char* profile) {
  Engine e(Profile(profile));
  EXPECT_TRUE(e.AddRequest(Req("a", Tokens(1, 16256), 1)).ok());
  auto log = RunToIdle(e, 0);
  const auto& f = log.finished.at("a");
  EXPECT_EQ(f.cached_tokens, 0);
  EXPECT_EQ(log.steps.size(), 8u);  // ceil(16,256 / 2,048) chunked-prefill steps
  return f.first_token - f.arrival;
}

TEST(CalibrationL40s, UncachedTtftOf16kPrompt) {
  double ttft = UncachedTtft("l40s-27b-fp8");
  EXPECT_GE(ttft, 6.5);
  EXPECT_LE(ttft, 7.0);
}

TEST(CalibrationL40s, CachedPrefixTtftItlAndE2e) {
  Engine e(Profile("l40s-27b-fp8"));
  auto prefix = Tokens(1, 16000);
  auto warm = prefix;
  auto tail1 = Tokens(2, 256);
  warm.insert(warm.end(), tail1.begin(), tail1.end());
  ASSERT_TRUE(e.AddRequest(Req("warm", warm, 1)).ok());
  Seconds t = RunToIdle(e, 0).end + 5.0;  // later, on an idle engine
  auto prompt = prefix;
  auto tail2 = Tokens(3, 256);
  prompt.insert(prompt.end(), tail2.begin(), tail2.end());
  ASSERT_TRUE(e.AddRequest(Req("b", prompt, 256, t)).ok());
  auto log = RunToIdle(e, t);
  const auto& f = log.finished.at("b");
  EXPECT_EQ(f.cached_tokens, 16000);
  double ttft = f.first_token - f.arrival;
  EXPECT_GE(ttft, 0.25);
  EXPECT_LE(ttft, 0.40);
  double e2e = f.finished - f.arrival;
  EXPECT_GE(e2e, 10.5);
  EXPECT_LE(e2e, 12.0);
  EXPECT_EQ(f.completion_tokens, 256);
  // Decode inter-token latency at batch 1.
  const auto& toks = log.tokens.at("b");
  for (size_t i = 1; i < log.steps.size(); ++i) {
    double itl = log.steps[i].end - log.steps[i - 1].end;
    EXPECT_GE(itl, 0.040);
    EXPECT_LE(itl, 0.045);
  }
  EXPECT_EQ(toks.size(), 256u);
}

TEST(CalibrationH100, FasterThanL40sBySpecRatios) {
  auto l = Profile("l40s-27b-fp8"), h = Profile("h100-27b-fp8");
  EXPECT_GT(h.num_gpu_blocks, 3 * l.num_gpu_blocks);
  double ratio = UncachedTtft("l40s-27b-fp8") / UncachedTtft("h100-27b-fp8");
  EXPECT_GT(ratio, 2.3);  // prefill is compute-bound: ~2.7x FP8 spec ratio
  EXPECT_LT(ratio, 2.8);
  double itl_l = StepDuration(l, {}, {16000}), itl_h = StepDuration(h, {}, {16000});
  EXPECT_GT(itl_l / itl_h, 3.0);  // decode is memory-bound: ~3.9x bandwidth ratio
}

// The CPU profile's two measured points (real vLLM on two CPU cores, tiny Qwen2): the
// cost grows ~3.6x for twice the tokens, a shape the GPU profiles do not have.
TEST(CalibrationCpu, ColdTtftGrowsFasterThanLinearly) {
  auto ttft = [](int tokens) {
    Engine e(Profile("cpu-qwen2-tiny"));
    EXPECT_TRUE(e.AddRequest(Req("a", Tokens(1, tokens), 1)).ok());
    auto log = RunToIdle(e, 0);
    const auto& f = log.finished.at("a");
    return f.first_token - f.arrival;
  };
  const double t2k = ttft(2048), t4k = ttft(4096);
  EXPECT_NEAR(t2k, 0.035, 0.004);
  EXPECT_NEAR(t4k, 0.125, 0.010);
  EXPECT_GT(t4k / t2k, 3.0);
  auto l = Profile("l40s-27b-fp8");
  EXPECT_LT(StepDuration(l, {{2048, 2048}}, {}) / StepDuration(l, {{2048, 0}}, {}), 1.1);
}

TEST(StepDurationTest, EmptyStepIsFreeAndTermsAdd) {
  auto p = testing::TinyProfile(10);
  p.attn_s_per_token_ctx = 1e-6;
  p.decode_s_per_seq = 0.001;
  p.decode_s_per_ctx_token = 1e-5;
  EXPECT_EQ(StepDuration(p, {}, {}), 0.0);
  // 0.01 + 4 * 0.001 + 1e-6 * (4 * 10 + 4 * 5 / 2)
  EXPECT_NEAR(StepDuration(p, {{4, 10}}, {}), 0.01 + 0.004 + 1e-6 * 50, 1e-12);
  EXPECT_NEAR(StepDuration(p, {}, {100, 200}), 0.01 + 0.01 + 0.002 + 1e-5 * 300, 1e-12);
}

}  // namespace
}  // namespace kinference::engine
