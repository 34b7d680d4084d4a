#include "accounting/limit_headers.h"

#include <gtest/gtest.h>

#include <map>

#include "accounting/calendar.h"

namespace kinference::accounting {
namespace {

std::map<std::string, std::string> AsMap(const HeaderList& h) { return {h.begin(), h.end()}; }

TEST(OpenAiDuration, IsWrittenAsOpenAiWritesIt) {
  EXPECT_EQ(FormatOpenAiDuration(0), "0ms");
  EXPECT_EQ(FormatOpenAiDuration(0.012), "12ms");
  EXPECT_EQ(FormatOpenAiDuration(1), "1s");
  EXPECT_EQ(FormatOpenAiDuration(17.5), "17.5s");
  EXPECT_EQ(FormatOpenAiDuration(360), "6m0s");
  EXPECT_EQ(FormatOpenAiDuration(3600), "1h0m0s");
}

Admission Sample() {
  Admission a;
  a.states = {{LimitKind::kRequests, 600, 599, 0.1},
              {LimitKind::kInputTokens, 100000, 90000, 6},
              {LimitKind::kOutputTokens, 20000, 1000, 57},
              {LimitKind::kSpendDay, 5e10, 4e10, 3600}};
  return a;
}

TEST(RateLimitHeaders, OpenAiNamesRequestsAndTheMoreRestrictiveTokenLimit) {
  auto h = AsMap(OpenAiRateLimitHeaders(Sample()));
  EXPECT_EQ(h["x-ratelimit-limit-requests"], "600");
  EXPECT_EQ(h["x-ratelimit-remaining-requests"], "599");
  EXPECT_EQ(h["x-ratelimit-reset-requests"], "100ms");
  EXPECT_EQ(h["x-ratelimit-limit-tokens"], "20000");  // output tokens: fewer remaining
  EXPECT_EQ(h["x-ratelimit-remaining-tokens"], "1000");
  EXPECT_EQ(h["x-ratelimit-reset-tokens"], "57s");
  EXPECT_EQ(h.size(), 6u);
  EXPECT_FALSE(h.contains("retry-after"));
}

TEST(RateLimitHeaders, AnthropicNamesEveryLimitWithRfc3339Resets) {
  const double now = *ParseTime("2025-03-10T12:00:00Z");
  auto h = AsMap(AnthropicRateLimitHeaders(Sample(), now));
  EXPECT_EQ(h["anthropic-ratelimit-requests-limit"], "600");
  EXPECT_EQ(h["anthropic-ratelimit-requests-remaining"], "599");
  EXPECT_EQ(h["anthropic-ratelimit-requests-reset"], "2025-03-10T12:00:01Z");
  EXPECT_EQ(h["anthropic-ratelimit-input-tokens-limit"], "100000");
  EXPECT_EQ(h["anthropic-ratelimit-input-tokens-remaining"], "90000");
  EXPECT_EQ(h["anthropic-ratelimit-input-tokens-reset"], "2025-03-10T12:00:06Z");
  EXPECT_EQ(h["anthropic-ratelimit-output-tokens-remaining"], "1000");
  EXPECT_EQ(h["anthropic-ratelimit-tokens-limit"], "20000");
  EXPECT_EQ(h["anthropic-ratelimit-tokens-reset"], "2025-03-10T12:00:57Z");
  EXPECT_EQ(h.size(), 12u);
}

TEST(RateLimitHeaders, RetryAfterIsWholeSecondsRoundedUpAndAtLeastOne) {
  Admission a;
  a.admitted = false;
  a.retry_after_s = 0.2;
  EXPECT_EQ(AsMap(RetryAfterHeader(a))["retry-after"], "1");
  a.retry_after_s = 6.01;
  EXPECT_EQ(AsMap(RetryAfterHeader(a))["retry-after"], "7");
  a.admitted = true;
  EXPECT_TRUE(RetryAfterHeader(a).empty());
}

TEST(RefusalMessage, NamesTheLimitTheAmountsAndTheWait) {
  Admission a = Sample();
  a.admitted = false;
  a.exceeded = LimitKind::kOutputTokens;
  a.retry_after_s = 5.5;
  EXPECT_EQ(RefusalMessage(a, "acme", {.output_tokens = 4000}),
            "Rate limit reached for tenant acme: output tokens per minute (limit 20000, "
            "remaining 1000, requested 4000). Retry after 6 s.");
  a.exceeded = LimitKind::kSpendDay;
  EXPECT_EQ(RefusalMessage(a, "acme", {.cost = 20'000'000'000}),
            "Budget exhausted for tenant acme: spend per day (limit 50 USD, remaining 40 USD, "
            "requested 20 USD). Retry after 6 s.");
}

}  // namespace
}  // namespace kinference::accounting
