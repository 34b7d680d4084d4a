#include "routing/ttft_predictor.h"

#include <algorithm>
#include <cmath>

namespace kinference::routing {
namespace {
constexpr TtftPredictor::Vec kPrior = {0.05, 0.25, 0.25, 0.002};  // see header
}  // namespace

TtftPredictor::Vec TtftPredictor::PriorCoefficients() { return kPrior; }

TtftPredictor::Vec TtftPredictor::Features(const TtftFeatures& f) {
  double u = std::max(0.0, f.uncached_tokens);
  double c = std::max(0.0, f.cached_tokens);
  return {1.0, (std::max(0.0, f.work_ahead_tokens) + u) / 1000.0,
          u * (c + u / 2) / 32768.0 / 1000.0, std::max(0.0, f.running_seqs)};
}

double TtftPredictor::PriorWork(const TtftFeatures& f) {
  Vec x = Features(f);
  double g = 0;
  for (int i = 1; i < kDim; ++i) g += kPrior[i] * x[i];
  return g;
}

TtftPredictor::Vec TtftPredictor::coefficients() const {
  Vec c = kPrior;
  for (int i = 1; i < kDim; ++i) c[i] *= scale();
  return c;
}

double TtftPredictor::scale() const { return std::clamp(sum_gy_ / sum_gg_, kMinScale, kMaxScale); }

TtftPrediction TtftPredictor::Predict(const TtftFeatures& f) const {
  TtftPrediction out;
  out.ttft_s = kPrior[0] + scale() * PriorWork(f);
  out.queue_wait_s = std::clamp(scale() * kPrior[1] * std::max(0.0, f.work_ahead_tokens) / 1000.0,
                                0.0, out.ttft_s);
  return out;
}

void TtftPredictor::Observe(const TtftFeatures& f, double observed_s) {
  if (!std::isfinite(observed_s) || observed_s < 0) return;
  double g = PriorWork(f);
  double y = std::max(0.0, observed_s - kPrior[0]);
  // Weighted least squares of y = s * g with forgetting; the prior is a pseudo-observation
  // (g = y = 1 s) that is never forgotten, so the fit cannot run away.
  sum_gy_ = kForgetting * (sum_gy_ - kPriorWeight) + g * y + kPriorWeight;
  sum_gg_ = kForgetting * (sum_gg_ - kPriorWeight) + g * g + kPriorWeight;
  ++n_;
}

}  // namespace kinference::routing
