#include "accounting/estimate.h"

#include <algorithm>
#include <cmath>

namespace kinference::accounting {

int64_t EstimatePromptTokens(int64_t prompt_chars, const EstimateConfig& c) {
  if (prompt_chars <= 0) return 0;
  return static_cast<int64_t>(std::ceil(static_cast<double>(prompt_chars) / c.chars_per_token));
}

int64_t WorstCaseOutputTokens(int64_t max_tokens, const std::string& model,
                              const EstimateConfig& c) {
  return max_tokens > 0 ? max_tokens : c.ContextTokensFor(model);
}

Amounts ReservationFor(int64_t prompt_chars, int64_t max_tokens, const std::string& model,
                       const EstimateConfig& c, const std::optional<Price>& price,
                       const TenantLimits& limits) {
  Amounts a;
  a.input_tokens = EstimatePromptTokens(prompt_chars, c);
  a.output_tokens = WorstCaseOutputTokens(max_tokens, model, c);
  if (price)
    a.cost = Cost(*price, TokenCounts{.prompt = a.input_tokens, .completion = a.output_tokens});
  if (max_tokens <= 0 && limits.output_tokens_per_minute)
    a.output_tokens = std::min(a.output_tokens, *limits.output_tokens_per_minute);
  return a;
}

}  // namespace kinference::accounting
