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

double TtftPredictor::fixed_cost() const { return learn_shape_ ? t0_ : kPrior[0]; }

void TtftPredictor::SetSpeedPrior(double s) {
  const double old = kSpeedPriorWeight * prior_scale_;
  prior_scale_ = std::clamp(s, kMinScale, kMaxScale);
  sum_gy_ += kSpeedPriorWeight * prior_scale_ - old;
}

double TtftPredictor::scale() const { return std::clamp(sum_gy_ / sum_gg_, kMinScale, kMaxScale); }

TtftPredictor::Vec TtftPredictor::coefficients() const {
  Vec c = kPrior;
  c[0] = fixed_cost();
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
  out.ttft_s = fixed_cost() + Work(f);
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

double TtftPredictor::RobustWeight(double residual_s, double predicted_s) {
  const double e = std::abs(residual_s);
  if (spread_s_ < 0) {  // the first observation sets the scale
    spread_s_ = e;
    return 1.0;
  }
  const double limit = std::max(kHuberK * spread_s_, kHuberFloor * predicted_s);
  const double w = e > limit && e > 0 ? limit / e : 1.0;
  // The spread follows the errors, each clipped at twice the limit, so one outlier
  // moves it little while a lasting change (the endpoint slowed down) raises it within
  // tens of observations and the new level stops being down-weighted.
  spread_s_ = kSpreadForgetting * spread_s_ + (1 - kSpreadForgetting) * std::min(e, 2 * limit);
  return w;
}

void TtftPredictor::Observe(const TtftFeatures& f, double observed_s) {
  if (!std::isfinite(observed_s) || observed_s < 0) return;
  const double predicted = Predict(f).ttft_s;
  const double w = RobustWeight(observed_s - predicted, predicted);
  ++n_;
  const bool unqueued = f.work_ahead_tokens <= 0.02 * std::max(0.0, f.uncached_tokens);
  const double work = Work(f);
  if (learn_shape_ && unqueued) {
    if (work <= kFixedShare * observed_s) {
      // Fixed cost: what the learned per-token cost leaves of an unqueued TTFT that it
      // explains less than half of (so an error in the speed moves the estimate by less
      // than the error itself). An exponential average whose step is capped at a
      // fraction of the spread, so that an outlier moves it by at most the cap and even
      // one-sided stalls bias it little (a median-like location estimate).
      const double cap = kFixedStepCap * spread_s_;
      t0_ += std::clamp(kFixedGain * (observed_s - work - t0_), -cap, cap);
      t0_ = std::clamp(t0_, 0.0, kMaxFixedCost);
    } else {
      // Work-dominated: the data cannot tell the fixed cost from the speed (with every
      // prompt alike they are collinear); drift back to the prior.
      t0_ += (1 - kForgetting) * (kPrior[0] - t0_);
    }
  }
  const double y = std::max(0.0, observed_s - fixed_cost());
  // Speed: weighted least squares of y = s * g (g: the prior's cost with the learned
  // shape) with forgetting; the prior is a pseudo-observation (kSpeedPriorWeight) that is
  // never forgotten, so the fit cannot run away.
  const double g = ShapedWork(f);
  const double prior_gy = kSpeedPriorWeight * prior_scale_;
  sum_gy_ = kForgetting * (sum_gy_ - prior_gy) + w * g * y + prior_gy;
  sum_gg_ = kForgetting * (sum_gg_ - kSpeedPriorWeight) + w * g * g + kSpeedPriorWeight;
  if (!learn_shape_ || !unqueued) return;
  Vec x = Features(f);
  const double u = kPrior[1] * x[1] + kPrior[3] * x[3], v = kPrior[2] * x[2];
  suu_ = kForgetting * suu_ + w * u * u;
  suv_ = kForgetting * suv_ + w * u * v;
  svv_ = kForgetting * svv_ + w * v * v;
  suy_ = kForgetting * suy_ + w * u * y;
  svy_ = kForgetting * svy_ + w * v * y;
  SolveShape();
}

}  // namespace kinference::routing
