#include "routing/chars_per_token.h"

namespace kinference::routing {

void CharsPerToken::Observe(size_t chars, int tokens) {
  if (chars == 0 || tokens <= 0) return;
  // Decay only the evidence, never below the prior's weight.
  double prior_c = kPriorRatio * kPriorTokens;
  chars_ = prior_c + (chars_ - prior_c) * kDecay + static_cast<double>(chars);
  tokens_ = kPriorTokens + (tokens_ - kPriorTokens) * kDecay + tokens;
  observed_ = true;
}

}  // namespace kinference::routing
