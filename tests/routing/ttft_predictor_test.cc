#include "routing/ttft_predictor.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// Synthetic ground truth of the model's form, different from the prior: a faster
// endpoint (s = 0.32) with the prior's 50 ms fixed cost.
double Truth(const TtftFeatures& f) { return 0.05 + 0.32 * TtftPredictor::PriorWork(f); }

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
  EXPECT_NEAR(p.scale(), 0.32, 0.01);
  for (TtftFeatures f : {TtftFeatures{0, 500, 0, 0}, TtftFeatures{10000, 8000, 4000, 10},
                         TtftFeatures{0, 16000, 16000, 32}}) {
    double truth = Truth(f);
    EXPECT_NEAR(p.Predict(f).ttft_s, truth, 0.03 * truth + 0.002)
        << f.work_ahead_tokens << " " << f.uncached_tokens;
  }
}

TEST(TtftPredictor, AdaptsWhenTheEndpointSlowsDown) {
  TtftPredictor p;
  auto truth = [](const TtftFeatures& f, double s) {
    return 0.05 + s * TtftPredictor::PriorWork(f);
  };
  for (int i = 0; i < 100; ++i) {
    TtftFeatures f{0, 1000.0 + 500 * (i % 10), 0, 0};
    p.Observe(f, truth(f, 0.4));
  }
  TtftFeatures q{0, 1500, 0, 0};
  EXPECT_NEAR(p.Predict(q).ttft_s, truth(q, 0.4), 0.01);
  for (int i = 0; i < 100; ++i) {  // three times slower now
    TtftFeatures f{0, 1000.0 + 500 * (i % 10), 0, 0};
    p.Observe(f, truth(f, 1.2));
  }
  EXPECT_NEAR(p.Predict(q).ttft_s, truth(q, 1.2), 0.03);
}

// Collinear features (every prompt the same length, as in the `independent` workload)
// and observations the model cannot explain must not make the fit run away (the old free
// four-coefficient fit drifted to t0 = -3.7 s and 0.55 s per running sequence on such
// data in the simulator).
TEST(TtftPredictor, StaysBoundedOnCollinearNoisyData) {
  TtftPredictor p;
  for (int i = 0; i < 500; ++i) {
    TtftFeatures f{i % 3 == 0 ? 12000.0 : 0.0, 16300, 0, static_cast<double>(i % 5)};
    // Half the time an unseen queue doubles the TTFT.
    p.Observe(f, (i % 2 ? 6.8 : 13.6) + 0.01 * (i % 7));
  }
  TtftFeatures idle{0, 16300, 0, 0};
  double pred = p.Predict(idle).ttft_s;
  EXPECT_GT(pred, 6.0);
  EXPECT_LT(pred, 14.0);
  EXPECT_DOUBLE_EQ(p.coefficients()[0], 0.05);
  EXPECT_GT(p.Predict({12000, 16300, 0, 0}).ttft_s, pred);
}

// vLLM on a CPU (engine profile cpu-qwen2-tiny): attention costs ~100x more against
// the linear term than the prior assumes. One speed factor cannot fit both short cold
// prompts and turns over a long cached history; the learned shape can.
double CpuTruth(const TtftFeatures& f) {
  const double u = f.uncached_tokens, c = f.cached_tokens;
  return 0.05 + 3.17e-6 * (f.work_ahead_tokens + u) + 1.31e-8 * u * (c + u / 2);
}

TEST(TtftPredictor, LearnsACostOfAnotherShape) {
  TtftPredictor shaped, speed_only(/*learn_shape=*/false);
  uint64_t s = 777;
  auto rnd = [&s](double hi) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return hi * static_cast<double>(s >> 11) / 9007199254740992.0;
  };
  for (int i = 0; i < 300; ++i) {
    TtftFeatures f{i % 4 == 0 ? rnd(3000) : 0.0, 300 + rnd(6000), i % 2 ? rnd(12000) : 0.0, 0};
    shaped.Observe(f, CpuTruth(f));
    speed_only.Observe(f, CpuTruth(f));
  }
  EXPECT_GT(shaped.shape(), 20.0);  // attention weighs far more than the prior's shape
  EXPECT_EQ(speed_only.shape(), 1.0);
  double worst_shaped = 0, worst_speed = 0;
  for (TtftFeatures f :
       {TtftFeatures{0, 2048, 0, 0}, TtftFeatures{0, 4096, 0, 0}, TtftFeatures{0, 1300, 12000, 0},
        TtftFeatures{0, 500, 0, 0}, TtftFeatures{2000, 1000, 4000, 0}}) {
    const double truth = CpuTruth(f);
    worst_shaped = std::max(worst_shaped, std::abs(shaped.Predict(f).ttft_s - truth) / truth);
    worst_speed = std::max(worst_speed, std::abs(speed_only.Predict(f).ttft_s - truth) / truth);
  }
  EXPECT_LT(worst_shaped, 0.12);
  EXPECT_GT(worst_speed, 0.3);
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
