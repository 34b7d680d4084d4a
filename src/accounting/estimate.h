// Estimates: what a request reserves before dispatch, and what a finished request is
// settled and billed with (accounting/limits.h, prices.h).
//
// Before dispatch, once the router has picked the endpoint (its price is the one
// reserved; a retry on an endpoint at another price reserves again), the worst case the
// request can cost:
//   input  = ceil(prompt characters / chars_per_token) (4 by default: OpenAI's rule of
//            thumb for English text); the gateway passes the characters of everything
//            the model reads as text: the messages' rendering (system prompt included)
//            and the tool definitions;
//   output = max_tokens when the request sets it (an engine or provider never generates
//            more), else the served model's whole context window
//            (EstimateConfig::ContextTokensFor: the most any request to it can generate);
//   cost   = that at the picked endpoint's price (no price: 0).
// The output tokens taken from an output_tokens_per_minute bucket are capped at its
// capacity when the request sets no max_tokens (the context window would make every such
// request too large for the bucket; the bucket may go into debt at settlement, which
// later requests wait out); the cost is not capped: a spend budget cannot be repaid.
// An over-estimate is given back at settlement, which uses the upstream's usage. What is
// left to overshoot a budget: the prompt tokens beyond the chars_per_token estimate (a
// tokenizer denser than 4 characters per token, the chat template's tokens, image or
// audio parts, which are not text) of the requests in flight, at the input price
// (docs/accounting.md, "Overshoot").
// After: the real counts when the upstream reported usage; else (a cut stream, a
// cancelled request, an upstream that sends no usage) prompt = the estimate above and
// completion = the content chunks seen (vLLM streams about one token per chunk), marked
// usage_estimated in the record.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "accounting/config.h"
#include "accounting/limits.h"
#include "accounting/prices.h"

namespace kinference::accounting {

int64_t EstimatePromptTokens(int64_t prompt_chars, const EstimateConfig& c);
// The most completion tokens a request to `model` can cost (see above).
int64_t WorstCaseOutputTokens(int64_t max_tokens, const std::string& model,
                              const EstimateConfig& c);

// The reservation for a request to `model` at the picked endpoint's `price` (nullopt:
// unpriced, cost 0) under the tenant's `limits`.
Amounts ReservationFor(int64_t prompt_chars, int64_t max_tokens, const std::string& model,
                       const EstimateConfig& c, const std::optional<Price>& price,
                       const TenantLimits& limits);

// What a finished request settles with: uncached input, completion, cost.
inline Amounts SettledAmounts(const TokenCounts& t, NanoUsd cost) {
  return {t.prompt - std::min(t.prompt, t.cached), t.completion, cost};
}

}  // namespace kinference::accounting
