#include "accounting/limits.h"

#include <gtest/gtest.h>

#include "accounting/calendar.h"

namespace kinference::accounting {
namespace {

const double kNoon = *ParseTime("2025-03-10T12:00:00Z");

Admission Ask(LocalLimiter& lim, const TenantLimits& l, Amounts est, double now,
              std::optional<Reservation>* out = nullptr, const std::string& tenant = "acme") {
  Admission result;
  lim.Reserve(tenant, l, est, "req", now, [&](Admission a, std::optional<Reservation> r) {
    result = std::move(a);
    if (out) *out = std::move(r);
  });
  return result;
}

TEST(TokenBucket, AdmitsAFullMinuteAtOnceThenRefillsContinuously) {
  LocalLimiter lim;
  TenantLimits l{.requests_per_minute = 60};
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(Ask(lim, l, {}, kNoon).admitted) << i;
  Admission refused = Ask(lim, l, {}, kNoon);
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.exceeded, LimitKind::kRequests);
  EXPECT_DOUBLE_EQ(refused.retry_after_s, 1.0);  // one request flows back per second
  EXPECT_FALSE(Ask(lim, l, {}, kNoon + 0.5).admitted);
  EXPECT_TRUE(Ask(lim, l, {}, kNoon + 1.0).admitted);
}

TEST(TokenBucket, ReservesEstimatedTokensSoConcurrentRequestsCannotShareTheAllowance) {
  LocalLimiter lim;
  TenantLimits l{.input_tokens_per_minute = 1000};
  // Ten requests of 100 estimated input tokens fit; the eleventh does not, although none
  // has finished (no usage known yet).
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Ask(lim, l, {.input_tokens = 100}, kNoon).admitted);
  Admission a = Ask(lim, l, {.input_tokens = 100}, kNoon);
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.exceeded, LimitKind::kInputTokens);
  EXPECT_NEAR(a.retry_after_s, 6.0, 1e-9);  // 100 tokens at 1000/60 per second
}

TEST(TokenBucket, SettlingGivesBackCachedAndUnusedTokensAndChargesOverruns) {
  LocalLimiter lim;
  TenantLimits l{.input_tokens_per_minute = 1000, .output_tokens_per_minute = 1000};
  std::optional<Reservation> r;
  ASSERT_TRUE(Ask(lim, l, {.input_tokens = 600, .output_tokens = 256}, kNoon, &r).admitted);
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(lim.Find("acme")->input.level, 400);
  // The prompt had 600 tokens, 500 read from cache: only 100 count; 700 output tokens
  // were generated, 444 more than reserved.
  lim.Settle(*r, {.input_tokens = 100, .output_tokens = 700}, kNoon);
  EXPECT_DOUBLE_EQ(lim.Find("acme")->input.level, 900);
  EXPECT_DOUBLE_EQ(lim.Find("acme")->output.level, 300);
}

TEST(TokenBucket, ABucketInDebtRefusesUntilRefilled) {
  LocalLimiter lim;
  TenantLimits l{.output_tokens_per_minute = 600};
  std::optional<Reservation> r;
  ASSERT_TRUE(Ask(lim, l, {.output_tokens = 100}, kNoon, &r).admitted);
  lim.Settle(*r, {.output_tokens = 1200}, kNoon);  // 600 - 1200 = -600
  Admission a = Ask(lim, l, {.output_tokens = 10}, kNoon);
  EXPECT_FALSE(a.admitted);
  EXPECT_NEAR(a.retry_after_s, 61.0, 1e-9);  // 610 tokens at 10 per second
  EXPECT_TRUE(Ask(lim, l, {.output_tokens = 10}, kNoon + 61).admitted);
}

TEST(TokenBucket, AnEstimateAboveTheLimitIsTooLarge) {
  LocalLimiter lim;
  TenantLimits l{.input_tokens_per_minute = 1000};
  Admission a = Ask(lim, l, {.input_tokens = 1001}, kNoon);
  EXPECT_FALSE(a.admitted);
  EXPECT_TRUE(a.too_large);
}

TEST(Concurrency, RefusesBeyondTheMaximumUntilARequestSettles) {
  LocalLimiter lim;
  TenantLimits l{.max_concurrent_requests = 2};
  std::optional<Reservation> r1, r2;
  ASSERT_TRUE(Ask(lim, l, {}, kNoon, &r1).admitted);
  ASSERT_TRUE(Ask(lim, l, {}, kNoon, &r2).admitted);
  Admission a = Ask(lim, l, {}, kNoon);
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.exceeded, LimitKind::kConcurrent);
  EXPECT_DOUBLE_EQ(a.retry_after_s, kConcurrencyRetryAfterS);
  lim.Settle(*r1, {}, kNoon);
  EXPECT_TRUE(Ask(lim, l, {}, kNoon).admitted);
}

TEST(Spend, DailyBudgetCountsReservationsAndResetsAtUtcMidnight) {
  LocalLimiter lim;
  TenantLimits l{.spend_per_day = 1000};
  std::optional<Reservation> r;
  ASSERT_TRUE(Ask(lim, l, {.cost = 600}, kNoon, &r).admitted);
  Admission a = Ask(lim, l, {.cost = 600}, kNoon);
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.exceeded, LimitKind::kSpendDay);
  EXPECT_DOUBLE_EQ(a.retry_after_s, 12 * 3600.0);
  // The first request cost less than estimated: the difference is free again.
  lim.Settle(*r, {.cost = 300}, kNoon);
  EXPECT_TRUE(Ask(lim, l, {.cost = 600}, kNoon).admitted);
  EXPECT_FALSE(Ask(lim, l, {.cost = 600}, kNoon + 3600).admitted);
  EXPECT_TRUE(Ask(lim, l, {.cost = 600}, *ParseTime("2025-03-11T00:00:00Z")).admitted);
}

TEST(Spend, SettlingAfterMidnightDoesNotChargeTheNewDay) {
  LocalLimiter lim;
  TenantLimits l{.spend_per_day = 1000};
  std::optional<Reservation> r;
  ASSERT_TRUE(Ask(lim, l, {.cost = 900}, *ParseTime("2025-03-10T23:59:59Z"), &r).admitted);
  const double next = *ParseTime("2025-03-11T00:00:01Z");
  lim.Settle(*r, {.cost = 2000}, next);
  EXPECT_EQ(lim.Find("acme")->day_spent, 0);
  EXPECT_TRUE(Ask(lim, l, {.cost = 1000}, next).admitted);
}

TEST(Spend, MonthlyBudgetIsExhaustedMessageFirstAndWaitsForNextMonth) {
  LocalLimiter lim;
  TenantLimits l{.requests_per_minute = 1, .spend_per_month = 100};
  lim.SeedSpend("acme", DayIndex(kNoon), 0, MonthIndex(kNoon), 100);
  ASSERT_TRUE(Ask(lim, l, {.cost = 0}, kNoon).admitted);  // takes the one request
  Admission a = Ask(lim, l, {.cost = 1}, kNoon);
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.exceeded, LimitKind::kSpendMonth);  // spend names the error
  EXPECT_DOUBLE_EQ(a.retry_after_s, *ParseTime("2025-04-01") - kNoon);
}

TEST(Limits, TenantsAreIndependent) {
  LocalLimiter lim;
  TenantLimits l{.requests_per_minute = 1};
  EXPECT_TRUE(Ask(lim, l, {}, kNoon, nullptr, "a").admitted);
  EXPECT_FALSE(Ask(lim, l, {}, kNoon, nullptr, "a").admitted);
  EXPECT_TRUE(Ask(lim, l, {}, kNoon, nullptr, "b").admitted);
}

TEST(Limits, StatesReportRemainingAndResetAfterTheReservation) {
  LocalLimiter lim;
  TenantLimits l{.requests_per_minute = 60, .input_tokens_per_minute = 6000};
  Admission a = Ask(lim, l, {.input_tokens = 600}, kNoon);
  ASSERT_TRUE(a.admitted);
  ASSERT_EQ(a.states.size(), 2u);
  EXPECT_EQ(a.states[0].kind, LimitKind::kRequests);
  EXPECT_EQ(a.states[0].remaining, 59);
  EXPECT_DOUBLE_EQ(a.states[0].reset_s, 1.0);
  EXPECT_EQ(a.states[1].kind, LimitKind::kInputTokens);
  EXPECT_EQ(a.states[1].remaining, 5400);
  EXPECT_DOUBLE_EQ(a.states[1].reset_s, 6.0);
}

}  // namespace
}  // namespace kinference::accounting
