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
// Refusals (RefusalHeaders): one that passes soon (limits.h PassesSoon: a wait of at
// most kMaxRetryAfterS) carries retry-after (whole seconds, rounded up, at least 1);
// any other (a spend budget exhausted until its window ends, a bucket in debt for
// longer, a request larger than a limit) carries `x-should-retry: false` and no
// retry-after. Both official SDKs obey that header before anything else, whatever the
// status (openai-python 3.63.0 and anthropic-sdk-python 2.17.0, _base_client.py
// _should_retry), so a client out of budget sees the error at once instead of sleeping
// until midnight. A refusal for a spend budget also carries
//   x-kinference-budget-limit-usd, x-kinference-budget-remaining-usd (decimal USD),
//   x-kinference-budget-reset (RFC 3339: the end of the exceeded budget's UTC day or
//   month),
// since neither API has a standard header for spend; the message says the same.
// Only configured limits produce the rate-limit headers; concurrency has no standard
// header and is reported in the refusal message instead.
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
// The headers above for a refused request (empty when admitted); `now`: Unix seconds.
HeaderList RefusalHeaders(const Admission& a, double now);

// The refusal's message, e.g. "Rate limit reached for tenant acme: input tokens per
// minute (limit 10000, remaining 120, requested 900). Retry after 6 s."; a refusal that
// does not pass soon says when the limit resets instead ("Resets at <RFC 3339> (in
// 15h40m0s); retrying sooner cannot pass."), a too_large one that it can never pass.
std::string RefusalMessage(const Admission& a, const std::string& tenant, const Amounts& est,
                           double now);

}  // namespace kinference::accounting
