#include "routing/ttft_predictor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace kinference::routing {
namespace {

TEST(TtftPredictor, PriorIsSane) {
  TtftPredictor p;
  // Idle endpoint, 1000 uncached tokens: 50 ms + 250 ms + a little attention.
  auto idle = p.Predict({0, 1000, 0, 0});
  EXPECT_NEAR(idle.ttft_s, 0.30, 0.01);
  EXPECT_DOUBLE_EQ(idle.queue_wait_s, 0);
  // 8000 tokens queued ahead: two more seconds, all of it queue wait.
  auto busy = p.Predict({8000, 1000, 0, 0});
  EXPECT_NEAR(busy.ttft_s - idle.ttft_s, 2.0, 1e-9);
  EXPECT_NEAR(busy.queue_wait_s, 2.0, 1e-9);
  // A cached prompt is cheap; the fixed cost remains.
  EXPECT_NEAR(p.Predict({0, 0, 16000, 0}).ttft_s, 0.05, 1e-9);
  EXPECT_EQ(p.observations(), 0);
}

// Synthetic ground truth of the model's form, different from the prior.
double Truth(const TtftFeatures& f) {
  double u = f.uncached_tokens;
  return 0.02 + 0.08 * (f.work_ahead_tokens + u) / 1000 +
         0.12 * u * (f.cached_tokens + u / 2) / 32768 / 1000 + 0.004 * f.running_seqs;
}

TEST(TtftPredictor, ConvergesToGroundTruth) {
  TtftPredictor p;
  uint64_t s = 12345;
  auto rnd = [&s](double hi) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return hi * static_cast<double>(s >> 11) / 9007199254740992.0;
  };
  for (int i = 0; i < 300; ++i) {
    TtftFeatures f{rnd(20000), rnd(16000), rnd(16000), std::floor(rnd(64))};
    p.Observe(f, Truth(f));
  }
  EXPECT_EQ(p.observations(), 300);
  for (TtftFeatures f : {TtftFeatures{0, 500, 0, 0}, TtftFeatures{10000, 8000, 4000, 10},
                         TtftFeatures{0, 16000, 16000, 32}}) {
    double truth = Truth(f);
    EXPECT_NEAR(p.Predict(f).ttft_s, truth, 0.03 * truth + 0.002)
        << f.work_ahead_tokens << " " << f.uncached_tokens;
  }
}

TEST(TtftPredictor, AdaptsWhenTheEndpointSlowsDown) {
  TtftPredictor p;
  for (int i = 0; i < 100; ++i) {
    TtftFeatures f{0, 1000.0 + 100 * (i % 10), 0, 0};
    p.Observe(f, 0.01 + 0.0001 * f.uncached_tokens);
  }
  EXPECT_NEAR(p.Predict({0, 1500, 0, 0}).ttft_s, 0.16, 0.01);
  for (int i = 0; i < 100; ++i) {  // three times slower now
    TtftFeatures f{0, 1000.0 + 100 * (i % 10), 0, 0};
    p.Observe(f, 0.03 + 0.0003 * f.uncached_tokens);
  }
  EXPECT_NEAR(p.Predict({0, 1500, 0, 0}).ttft_s, 0.48, 0.03);
}

TEST(TtftPredictor, PredictionsNonNegativeAndMonotoneInWork) {
  TtftPredictor p;
  for (int i = 0; i < 50; ++i) p.Observe({0, 100.0 * i, 0, 0}, 0.0);  // absurd: all zero
  EXPECT_GE(p.Predict({0, 10, 0, 0}).ttft_s, 0.0);
  EXPECT_GE(p.Predict({5000, 10, 0, 0}).ttft_s, p.Predict({0, 10, 0, 0}).ttft_s);
  for (int i = 1; i < TtftPredictor::kDim; ++i) EXPECT_GE(p.coefficients()[i], 0.0);
  p.Observe({0, 100, 0, 0}, -1);   // ignored
  p.Observe({0, 100, 0, 0}, NAN);  // ignored
  EXPECT_EQ(p.observations(), 50);
}

}  // namespace
}  // namespace kinference::routing
