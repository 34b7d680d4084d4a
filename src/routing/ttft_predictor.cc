#include "routing/ttft_predictor.h"

#include <algorithm>
#include <cmath>

namespace kinference::routing {
namespace {
constexpr double kForgetting = 0.97;
constexpr double kNoiseStd = 0.05;                                   // seconds
constexpr TtftPredictor::Vec kPrior = {0.05, 0.25, 0.25, 0.002};     // see header
constexpr TtftPredictor::Vec kPriorStd = {0.05, 0.25, 0.25, 0.005};  // see header
}  // namespace

TtftPredictor::Vec TtftPredictor::PriorCoefficients() { return kPrior; }

TtftPredictor::Vec TtftPredictor::Features(const TtftFeatures& f) {
  double u = std::max(0.0, f.uncached_tokens);
  double c = std::max(0.0, f.cached_tokens);
  return {1.0, (std::max(0.0, f.work_ahead_tokens) + u) / 1000.0,
          u * (c + u / 2) / 32768.0 / 1000.0, std::max(0.0, f.running_seqs)};
}

TtftPredictor::TtftPredictor() : theta_(kPrior) {
  for (int i = 0; i < kDim; ++i) {
    p_[i].fill(0.0);
    p0_[i] = (kPriorStd[i] / kNoiseStd) * (kPriorStd[i] / kNoiseStd);
    p_[i][i] = p0_[i];
  }
}

TtftPrediction TtftPredictor::Predict(const TtftFeatures& f) const {
  Vec x = Features(f);
  double y = 0;
  for (int i = 0; i < kDim; ++i) y += theta_[i] * x[i];
  TtftPrediction out;
  out.ttft_s = std::max(0.0, y);
  out.queue_wait_s =
      std::clamp(theta_[1] * std::max(0.0, f.work_ahead_tokens) / 1000.0, 0.0, out.ttft_s);
  return out;
}

void TtftPredictor::Observe(const TtftFeatures& f, double observed_s) {
  if (!std::isfinite(observed_s) || observed_s < 0) return;
  Vec x = Features(f);
  Vec px{};
  for (int i = 0; i < kDim; ++i)
    for (int j = 0; j < kDim; ++j) px[i] += p_[i][j] * x[j];
  double denom = kForgetting;
  for (int i = 0; i < kDim; ++i) denom += x[i] * px[i];
  double pred = 0;
  for (int i = 0; i < kDim; ++i) pred += theta_[i] * x[i];
  double err = observed_s - pred;
  Vec k{};
  for (int i = 0; i < kDim; ++i) k[i] = px[i] / denom;
  for (int i = 0; i < kDim; ++i) theta_[i] += k[i] * err;
  // P <- (P - k x^T P) / lambda; then no variance may exceed its prior (a congruence
  // D P D with D diagonal <= 1 keeps P positive definite): directions the data stop
  // exciting do not wind up, and excited ones keep forgetting.
  for (int i = 0; i < kDim; ++i)
    for (int j = 0; j < kDim; ++j) p_[i][j] = (p_[i][j] - k[i] * px[j]) / kForgetting;
  Vec d{};
  for (int i = 0; i < kDim; ++i) d[i] = p_[i][i] > p0_[i] ? std::sqrt(p0_[i] / p_[i][i]) : 1.0;
  for (int i = 0; i < kDim; ++i)
    for (int j = 0; j <= i; ++j) {
      double v = 0.5 * (p_[i][j] + p_[j][i]) * d[i] * d[j];  // symmetrised
      p_[i][j] = p_[j][i] = v;
    }
  for (int i = 1; i < kDim; ++i) theta_[i] = std::max(0.0, theta_[i]);
  ++n_;
}

}  // namespace kinference::routing
