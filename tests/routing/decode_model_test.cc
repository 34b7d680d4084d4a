#include "routing/decode_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace kinference::routing {
namespace {

// A decode step of the engine model's l40s-27b-fp8 profile: 2 ms + 39 ms, 0.4 ms per
// sequence, 9.48e-8 s per context token read (engine/profile.cc).
double L40sItl(double seqs, double ctx) { return 0.041 + 0.0004 * seqs + 9.48e-8 * ctx; }

TEST(DecodeModel, PriorIsSane) {
  DecodeModel m;
  EXPECT_NEAR(m.Itl(1, 16000), 0.030 + 0.0005 + 0.0016, 1e-12);
  EXPECT_NEAR(m.Marginal(16000), 0.0005 + 0.0016, 1e-12);
  EXPECT_EQ(m.observations(), 0);
}

TEST(DecodeModel, LearnsAnEndpointsDecodeStep) {
  DecodeModel m;
  uint64_t s = 99;
  auto rnd = [&s](double hi) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return hi * static_cast<double>(s >> 11) / 9007199254740992.0;
  };
  for (int i = 0; i < 300; ++i) {
    const double seqs = 1 + std::floor(rnd(30));
    const double ctx = seqs * (2000 + rnd(30000));
    m.Observe(seqs, ctx, L40sItl(seqs, ctx));
  }
  for (double seqs : {1.0, 10.0, 25.0}) {
    const double ctx = seqs * 16000;
    EXPECT_NEAR(m.Itl(seqs, ctx), L40sItl(seqs, ctx), 0.05 * L40sItl(seqs, ctx)) << seqs;
  }
  // What one more 32k-context sequence adds to every step: 0.4 ms + 3.0 ms.
  EXPECT_NEAR(m.Marginal(32000), 0.0004 + 32000 * 9.48e-8, 0.0008);
}

TEST(DecodeModel, StaysBoundedOnUnexplainableData) {
  DecodeModel m;
  for (int i = 0; i < 500; ++i) m.Observe(5, 5 * 16000, i % 2 ? 0.5 : 0.001);  // noise
  for (double w : m.weights()) EXPECT_TRUE(std::isfinite(w));
  const auto w = m.weights();
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_LE(w[j], DecodeModel::kMaxFactor * DecodeModel::kPrior[j] + 1e-12);
    EXPECT_GE(w[j], DecodeModel::kMinFactor * DecodeModel::kPrior[j] - 1e-12);
  }
  m.Observe(1, 1000, -1);   // ignored
  m.Observe(1, 1000, NAN);  // ignored
  EXPECT_EQ(m.observations(), 500);
}

}  // namespace
}  // namespace kinference::routing
