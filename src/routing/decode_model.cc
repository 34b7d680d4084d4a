#include "routing/decode_model.h"

#include <algorithm>
#include <cmath>

namespace kinference::routing {

std::array<double, 3> DecodeModel::Features(double seqs, double ctx_tokens) {
  return {1.0, std::max(0.0, seqs), std::max(0.0, ctx_tokens) / 1e6};
}

double DecodeModel::Itl(double seqs, double ctx_tokens) const {
  auto x = Features(seqs, ctx_tokens);
  return w_[0] * x[0] + w_[1] * x[1] + w_[2] * x[2];
}

double DecodeModel::Marginal(double ctx_tokens) const {
  return w_[1] + w_[2] * std::max(0.0, ctx_tokens) / 1e6;
}

void DecodeModel::Observe(double seqs, double ctx_tokens, double itl_s) {
  if (!std::isfinite(itl_s) || itl_s <= 0 || !std::isfinite(seqs) || !std::isfinite(ctx_tokens))
    return;
  auto x = Features(seqs, ctx_tokens);
  // Speed: least squares of y = s * (prior ITL), with a never-forgotten prior pseudo-
  // observation (s = 1), as TtftPredictor's scale.
  double g = kPrior[0] * x[0] + kPrior[1] * x[1] + kPrior[2] * x[2];
  sum_gy_ = kForgetting * (sum_gy_ - kPriorWeight) + g * itl_s + kPriorWeight;
  sum_gg_ = kForgetting * (sum_gg_ - kPriorWeight) + g * g + kPriorWeight;
  const double s = std::clamp(sum_gy_ / sum_gg_, kMinFactor, kMaxFactor);
  fit_.Observe(x, itl_s);
  auto w = fit_.Solve({s * kPrior[0], s * kPrior[1], s * kPrior[2]});
  for (size_t j = 0; j < 3; ++j)
    w_[j] = std::clamp(w[j], kMinFactor * kPrior[j], kMaxFactor * kPrior[j]);
}

}  // namespace kinference::routing
