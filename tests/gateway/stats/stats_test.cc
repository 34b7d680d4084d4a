#include "gateway/stats/stats.h"

#include <gtest/gtest.h>

namespace kinference::gateway {
namespace {

bool Contains(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(Stats, HistogramBucketsAreCumulativeAndUpperInclusive) {
  Stats s;
  s.RecordTtft("m", 0.1);   // exactly on a bound: counts in le="0.1"
  s.RecordTtft("m", 0.3);   // between 0.25 and 0.5
  s.RecordTtft("m", 5000);  // above the last bound: only +Inf
  std::string text = s.Exposition();
  EXPECT_TRUE(Contains(text, "# TYPE kinference_time_to_first_token_seconds histogram\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_time_to_first_token_seconds_bucket{model=\"m\",le=\"0.08\"} 0\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_time_to_first_token_seconds_bucket{model=\"m\",le=\"0.1\"} 1\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_time_to_first_token_seconds_bucket{model=\"m\",le=\"0.25\"} 1\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_time_to_first_token_seconds_bucket{model=\"m\",le=\"0.5\"} 2\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_time_to_first_token_seconds_bucket{model=\"m\",le=\"2560\"} 2\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_time_to_first_token_seconds_bucket{model=\"m\",le=\"+Inf\"} 3\n"));
  EXPECT_TRUE(Contains(text, "kinference_time_to_first_token_seconds_count{model=\"m\"} 3\n"));
  EXPECT_TRUE(Contains(text, "kinference_time_to_first_token_seconds_sum{model=\"m\"} 5000.4\n"));
}

TEST(Stats, TokenCountersAndUncached) {
  Stats s;
  s.RecordUsage("default", "m", routing::Usage{100, 60, 7});
  s.RecordUsage("default", "m", routing::Usage{50, 0, 3});
  std::string text = s.Exposition();
  EXPECT_TRUE(
      Contains(text, "kinference_prompt_tokens_total{tenant=\"default\",model=\"m\"} 150\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_cached_tokens_total{tenant=\"default\",model=\"m\"} 60\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_uncached_tokens_total{tenant=\"default\",model=\"m\"} 90\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_completion_tokens_total{tenant=\"default\",model=\"m\"} 10\n"));
  EXPECT_TRUE(Contains(text, "# TYPE kinference_prompt_tokens_total counter\n"));
}

TEST(Stats, RequestsByEndpointStrategyOutcome) {
  Stats s;
  s.RecordRequest("a/0", "predicted-ttft", "success");
  s.RecordRequest("a/0", "predicted-ttft", "success");
  s.RecordRequest("a/1", "random", "cancelled");
  EXPECT_EQ(s.requests().Get({"a/0", "predicted-ttft", "success"}), 2);
  EXPECT_EQ(s.requests().Get({"a/1", "random", "success"}), 0);
  EXPECT_TRUE(Contains(s.Exposition(),
                       "kinference_requests_total{endpoint=\"a/1\",strategy=\"random\","
                       "outcome=\"cancelled\"} 1\n"));
}

TEST(Stats, PredictionErrorIsSignedAndSymmetric) {
  ASSERT_EQ(kPredictionErrorBuckets.size(), 2 * kPredictionAbsErrorBuckets.size() + 1);
  for (size_t i = 0; i < kPredictionAbsErrorBuckets.size(); ++i)
    EXPECT_EQ(kPredictionErrorBuckets[i],
              -kPredictionErrorBuckets[kPredictionErrorBuckets.size() - 1 - i]);
  Stats s;
  s.RecordTtftPrediction("p", 0.2, 0.5);  // predicted 0.3 s too low
  std::string text = s.Exposition();
  EXPECT_TRUE(Contains(
      text, "kinference_ttft_prediction_error_seconds_bucket{strategy=\"p\",le=\"-0.5\"} 0\n"));
  EXPECT_TRUE(Contains(
      text, "kinference_ttft_prediction_error_seconds_bucket{strategy=\"p\",le=\"-0.25\"} 1\n"));
  EXPECT_TRUE(Contains(
      text, "kinference_ttft_prediction_abs_error_seconds_bucket{strategy=\"p\",le=\"0.25\"} 0\n"));
  EXPECT_TRUE(Contains(
      text, "kinference_ttft_prediction_abs_error_seconds_bucket{strategy=\"p\",le=\"0.5\"} 1\n"));
}

TEST(Stats, EveryFamilyHasHelpAndType) {
  Stats s;
  std::string text = s.Exposition();
  for (const char* name :
       {"kinference_time_to_first_token_seconds", "kinference_inter_token_latency_seconds",
        "kinference_e2e_request_latency_seconds", "kinference_prompt_tokens_total",
        "kinference_cached_tokens_total", "kinference_uncached_tokens_total",
        "kinference_completion_tokens_total", "kinference_requests_total",
        "kinference_ttft_prediction_error_seconds", "kinference_ttft_prediction_abs_error_seconds",
        "kinference_endpoint_healthy"}) {
    EXPECT_TRUE(Contains(text, std::string("# HELP ") + name + " ")) << name;
    EXPECT_TRUE(Contains(text, std::string("# TYPE ") + name + " ")) << name;
  }
}

TEST(Stats, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  Stats s;
  s.SetEndpointHealthy("x\"y", false);
  EXPECT_TRUE(Contains(s.Exposition(), "kinference_endpoint_healthy{endpoint=\"x\\\"y\"} 0\n"));
}

}  // namespace
}  // namespace kinference::gateway

namespace kinference::gateway {
namespace {

TEST(Stats, TenantLabelsAreBoundedAndLaterTenantsCountAsOther) {
  Stats s;
  for (size_t i = 0; i < kMaxTenantLabels + 5; ++i)
    s.RecordRateLimited("t" + std::to_string(i), "requests");
  s.RecordCost("t0", "m", 1'500'000'000, 0, true);      // a known tenant keeps its label
  s.RecordCost("late", "m", 2'000'000'000, 10, false);  // beyond the bound: _other
  std::string text = s.Exposition();
  EXPECT_TRUE(Contains(
      text, "kinference_rate_limit_rejections_total{tenant=\"t0\",limit=\"requests\"} 1\n"));
  EXPECT_TRUE(Contains(
      text, "kinference_rate_limit_rejections_total{tenant=\"_other\",limit=\"requests\"} 5\n"));
  EXPECT_TRUE(Contains(text, "kinference_cost_usd_total{tenant=\"t0\",model=\"m\"} 1.5\n"));
  EXPECT_TRUE(Contains(text, "kinference_cost_usd_total{tenant=\"_other\",model=\"m\"} 2\n"));
  EXPECT_TRUE(
      Contains(text, "kinference_cache_creation_tokens_total{tenant=\"_other\",model=\"m\"} 10\n"));
  EXPECT_TRUE(Contains(text, "kinference_unpriced_requests_total{model=\"m\"} 1\n"));
}

TEST(Stats, LedgerAndLimiterSamplesBecomeSeries) {
  Stats s;
  s.SetLedger(LedgerSample{.written = 7,
                           .spooled = 2,
                           .lost_queue_full = 1,
                           .queue_depth = 3,
                           .spool_records = 2,
                           .store_up = true});
  s.SetLimiter(LimiterSample{.checks = 9, .unavailable = 4, .up = false});
  std::string text = s.Exposition();
  EXPECT_TRUE(Contains(text, "kinference_ledger_records_total{state=\"written\"} 7\n"));
  EXPECT_TRUE(Contains(text, "kinference_ledger_lost_records_total{reason=\"queue_full\"} 1\n"));
  EXPECT_TRUE(Contains(text, "kinference_ledger_backlog_records{where=\"queue\"} 3\n"));
  EXPECT_TRUE(Contains(text, "kinference_ledger_store_up 1\n"));
  EXPECT_TRUE(Contains(text, "kinference_limits_checks_total{result=\"unavailable\"} 4\n"));
  EXPECT_TRUE(Contains(text, "kinference_limits_redis_up 0\n"));
}

}  // namespace
}  // namespace kinference::gateway
