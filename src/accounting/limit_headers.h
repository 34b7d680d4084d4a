// Rate-limit response headers and refusal texts, as the OpenAI and Anthropic APIs name
// them, from an Admission (limits.h).
//
// OpenAI (platform.openai.com/docs/guides/rate-limits, "rate limits in headers"):
//   x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests
//   x-ratelimit-limit-tokens,   x-ratelimit-remaining-tokens,   x-ratelimit-reset-tokens
//   Resets are durations as OpenAI writes them ("1s", "6m0s", "12ms"). OpenAI has one
//   token limit; ours are input and output tokens per minute, so "tokens" reports the
//   more restrictive of the two (the fewer remaining).
// Anthropic (docs.anthropic.com/en/api/rate-limits, "response headers"):
//   anthropic-ratelimit-requests-{limit,remaining,reset}
//   anthropic-ratelimit-tokens-{limit,remaining,reset}          (the most restrictive)
//   anthropic-ratelimit-input-tokens-{limit,remaining,reset}
//   anthropic-ratelimit-output-tokens-{limit,remaining,reset}
//   Resets are RFC 3339 times at which the limit is fully replenished.
// Both: retry-after (whole seconds, rounded up, at least 1) on refusals.
// Only configured limits produce headers; spend and concurrency have no standard
// header and are reported in the refusal message instead.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "accounting/limits.h"

namespace kinference::accounting {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// "0s", "12ms", "1s", "1.5s", "6m0s", "1h0m0s" (Go's time.Duration text, rounded to ms).
std::string FormatOpenAiDuration(double seconds);

HeaderList OpenAiRateLimitHeaders(const Admission& a);
// `now`: Unix seconds, to turn reset durations into RFC 3339 times.
HeaderList AnthropicRateLimitHeaders(const Admission& a, double now);
// retry-after for a refused request (empty when admitted).
HeaderList RetryAfterHeader(const Admission& a);

// The refusal's message, e.g. "Rate limit reached for tenant acme: input_tokens per
// minute (limit 10000, remaining 120, requested 900). Retry after 6 s."
std::string RefusalMessage(const Admission& a, const std::string& tenant, const Amounts& est);

}  // namespace kinference::accounting
