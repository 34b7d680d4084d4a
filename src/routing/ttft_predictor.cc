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

double TtftPredictor::shape() const { return learn_shape_ ? r_ : 1.0; }

double TtftPredictor::scale() const { return std::clamp(sum_gy_ / sum_gg_, kMinScale, kMaxScale); }

TtftPredictor::Vec TtftPredictor::coefficients() const {
  Vec c = kPrior;
  for (int i = 1; i < kDim; ++i) c[i] *= scale();
  c[2] *= shape();
  return c;
}

double TtftPredictor::ShapedWork(const TtftFeatures& f) const {
  Vec x = Features(f);
  return kPrior[1] * x[1] + shape() * kPrior[2] * x[2] + kPrior[3] * x[3];
}

double TtftPredictor::Work(const TtftFeatures& f) const { return scale() * ShapedWork(f); }

TtftPrediction TtftPredictor::Predict(const TtftFeatures& f) const {
  TtftPrediction out;
  out.ttft_s = kPrior[0] + Work(f);
  out.queue_wait_s = std::clamp(scale() * kPrior[1] * std::max(0.0, f.work_ahead_tokens) / 1000.0,
                                0.0, out.ttft_s);
  return out;
}

void TtftPredictor::SolveShape() {
  const double data = suu_ + 2 * suv_ + svv_;  // sum of (u + v)^2
  if (!(data > 0)) return;
  const double sd = (suy_ + svy_) / data;  // the data's best one-factor fit
  const double k = kShapeKappa, eps = 1e-12;
  const double pu = k * suu_ + eps, pv = k * svv_ + eps;
  const double m00 = suu_ + pu, m01 = suv_, m11 = svv_ + pv;
  const double r0 = suy_ + pu * sd, r1 = svy_ + pv * sd;
  const double det = m00 * m11 - m01 * m01;  // > 0: positive definite
  if (!(det > 0) || !std::isfinite(det)) return;
  const double a = (r0 * m11 - m01 * r1) / det;
  const double b = (m00 * r1 - m01 * r0) / det;
  if (!(a > 0) || !std::isfinite(b)) return;
  const double lambda = data / (data + kPriorWeight);
  r_ = std::clamp(lambda * (b / a) + (1 - lambda), kMinShape, kMaxShape);
}

void TtftPredictor::Observe(const TtftFeatures& f, double observed_s) {
  if (!std::isfinite(observed_s) || observed_s < 0) return;
  const double y = std::max(0.0, observed_s - kPrior[0]);
  // Speed: weighted least squares of y = s * g (g: the prior's cost with the learned
  // shape) with forgetting; the prior is a pseudo-observation (g = y = 1 s) that is
  // never forgotten, so the fit cannot run away.
  const double g = ShapedWork(f);
  sum_gy_ = kForgetting * (sum_gy_ - kPriorWeight) + g * y + kPriorWeight;
  sum_gg_ = kForgetting * (sum_gg_ - kPriorWeight) + g * g + kPriorWeight;
  ++n_;
  if (!learn_shape_ || f.work_ahead_tokens > 0.02 * std::max(0.0, f.uncached_tokens)) return;
  Vec x = Features(f);
  const double u = kPrior[1] * x[1] + kPrior[3] * x[3], v = kPrior[2] * x[2];
  suu_ = kForgetting * suu_ + u * u;
  suv_ = kForgetting * suv_ + u * v;
  svv_ = kForgetting * svv_ + v * v;
  suy_ = kForgetting * suy_ + u * y;
  svy_ = kForgetting * svy_ + v * y;
  SolveShape();
}

}  // namespace kinference::routing
