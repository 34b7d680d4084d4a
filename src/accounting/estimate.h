// Estimates: what a request reserves before dispatch, and what a finished request is
// settled and billed with (accounting/limits.h, prices.h).
//
// Before dispatch: input = ceil(prompt characters / chars_per_token) (4 by default:
// OpenAI's rule of thumb for English text; the gateway passes the characters of the
// request's rendered text), output = max_tokens when the request sets it, else
// estimate.output_tokens; cost = that at the highest price among the endpoints the
// request may go to (no price: 0). An over-estimate is given back at settlement.
// After: the real counts when the upstream reported usage; else (a cut stream, a
// cancelled request, an upstream that sends no usage) prompt = the estimate above and
// completion = the content chunks seen (vLLM streams about one token per chunk), marked
// usage_estimated in the record.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "accounting/config.h"
#include "accounting/limits.h"
#include "accounting/prices.h"

namespace kinference::accounting {

int64_t EstimatePromptTokens(int64_t prompt_chars, const EstimateConfig& c);
int64_t EstimateOutputTokens(int64_t max_tokens, const EstimateConfig& c);

// The reservation for a request. `prices`: the prices of its candidate endpoints
// (nullopt entries: unpriced); the highest cost among them is reserved.
Amounts ReservationFor(int64_t prompt_chars, int64_t max_tokens, const EstimateConfig& c,
                       const std::vector<std::optional<Price>>& prices);

// What a finished request settles with: uncached input, completion, cost.
inline Amounts SettledAmounts(const TokenCounts& t, NanoUsd cost) {
  return {t.prompt - std::min(t.prompt, t.cached), t.completion, cost};
}

}  // namespace kinference::accounting
