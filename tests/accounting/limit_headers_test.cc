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

const double kNow = *ParseTime("2025-03-10T12:00:00Z");

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
  EXPECT_EQ(AsMap(RefusalHeaders(a, 0))["retry-after"], "1");
  a.retry_after_s = 6.01;
  EXPECT_EQ(AsMap(RefusalHeaders(a, 0))["retry-after"], "7");
  EXPECT_EQ(AsMap(RefusalHeaders(a, 0)).count("x-should-retry"), 0u);
  a.admitted = true;
  EXPECT_TRUE(RefusalHeaders(a, 0).empty());
}

// Issue 25, item 1: a spend refusal carried Retry-After until UTC midnight (~66,000 s),
// which anthropic-sdk-python sleeps through twice before raising.
TEST(RateLimitHeaders, ExhaustedBudgetSaysDoNotRetryAndWhenItResetsWithoutRetryAfter) {
  Admission a = Sample();
  a.admitted = false;
  a.exceeded = LimitKind::kSpendDay;
  a.retry_after_s = 43'200;  // until midnight
  a.states.back().reset_s = 43'200;
  auto h = AsMap(RefusalHeaders(a, kNow));
  EXPECT_EQ(h.count("retry-after"), 0u);
  EXPECT_EQ(h["x-should-retry"], "false");
  EXPECT_EQ(h["x-kinference-budget-limit-usd"], "50");
  EXPECT_EQ(h["x-kinference-budget-remaining-usd"], "40");
  EXPECT_EQ(h["x-kinference-budget-reset"], "2025-03-11T00:00:00Z");
  EXPECT_EQ(RefusalMessage(a, "acme", {.cost = 20'000'000'000}, kNow),
            "Budget exhausted for tenant acme: spend per day (limit 50 USD, remaining 40 USD, "
            "requested 20 USD). Resets at 2025-03-11T00:00:00Z (in 12h0m0s); retrying sooner "
            "cannot pass.");
}

TEST(RateLimitHeaders, ARequestLargerThanTheLimitSaysDoNotRetryAndThatItCanNeverPass) {
  Admission a = Sample();
  a.admitted = false;
  a.exceeded = LimitKind::kOutputTokens;
  a.too_large = true;
  a.retry_after_s = 5;  // a short wait would not help either
  auto h = AsMap(RefusalHeaders(a, kNow));
  EXPECT_EQ(h.count("retry-after"), 0u);
  EXPECT_EQ(h["x-should-retry"], "false");
  EXPECT_EQ(RefusalMessage(a, "acme", {.output_tokens = 40000}, kNow),
            "Request too large for tenant acme: output tokens per minute (limit 20000, "
            "remaining 1000, requested 40000). It can never pass: set a smaller max_tokens or "
            "send a shorter prompt.");
}

TEST(RateLimitHeaders, ABucketInDebtForMoreThanAMinuteSaysDoNotRetry) {
  Admission a;
  a.admitted = false;
  a.exceeded = LimitKind::kOutputTokens;
  a.retry_after_s = kMaxRetryAfterS;
  EXPECT_EQ(AsMap(RefusalHeaders(a, kNow))["retry-after"], "60");
  a.retry_after_s = kMaxRetryAfterS + 0.5;
  EXPECT_EQ(AsMap(RefusalHeaders(a, kNow))["x-should-retry"], "false");
}

TEST(RefusalMessage, NamesTheLimitTheAmountsAndTheWait) {
  Admission a = Sample();
  a.admitted = false;
  a.exceeded = LimitKind::kOutputTokens;
  a.retry_after_s = 5.5;
  EXPECT_EQ(RefusalMessage(a, "acme", {.output_tokens = 4000}, kNow),
            "Rate limit reached for tenant acme: output tokens per minute (limit 20000, "
            "remaining 1000, requested 4000). Retry after 6 s.");
}

}  // namespace
}  // namespace kinference::accounting
