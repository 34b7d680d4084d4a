#include "accounting/estimate.h"

#include <algorithm>
#include <cmath>

namespace kinference::accounting {

int64_t EstimatePromptTokens(int64_t prompt_chars, const EstimateConfig& c) {
  if (prompt_chars <= 0) return 0;
  return static_cast<int64_t>(std::ceil(static_cast<double>(prompt_chars) / c.chars_per_token));
}

int64_t EstimateOutputTokens(int64_t max_tokens, const EstimateConfig& c) {
  return max_tokens > 0 ? max_tokens : c.output_tokens;
}

Amounts ReservationFor(int64_t prompt_chars, int64_t max_tokens, const EstimateConfig& c,
                       const std::vector<std::optional<Price>>& prices) {
  Amounts a;
  a.input_tokens = EstimatePromptTokens(prompt_chars, c);
  a.output_tokens = EstimateOutputTokens(max_tokens, c);
  TokenCounts t{.prompt = a.input_tokens, .completion = a.output_tokens};
  for (const auto& p : prices)
    if (p) a.cost = std::max(a.cost, Cost(*p, t));
  return a;
}

}  // namespace kinference::accounting
