#include "workload/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

namespace kinference::workload {
namespace {

RequestRecord Ok(double ttft, std::vector<double> itl, double e2e, int64_t prompt, int64_t cached,
                 std::string endpoint = "a") {
  RequestRecord r;
  r.id = "s/0";
  r.ttft_s = ttft;
  r.itl_s = std::move(itl);
  r.e2e_s = e2e;
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  r.completion_tokens = 4;
  r.endpoint = std::move(endpoint);
  return r;
}

TEST(PercentileTest, LinearInterpolationBetweenClosestRanks) {
  std::vector<double> v = {4, 1, 3, 2, 5};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(Percentile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.9), 4.6);  // numpy.percentile([1..5], 90) == 4.6
  EXPECT_DOUBLE_EQ(Percentile({1, 2}, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(Percentile({7}, 0.99), 7.0);
  EXPECT_TRUE(std::isnan(Percentile({}, 0.5)));
}

TEST(SummaryTest, ComputesStatisticsOverSuccessfulRequests) {
  std::vector<RequestRecord> recs = {
      Ok(1.0, {0.1, 0.3}, 2.0, 100, 50, "a"),
      Ok(3.0, {0.2}, 4.0, 100, 0, "b"),
      Ok(2.0, {}, 3.0, 200, 150, "a"),
  };
  RequestRecord bad;
  bad.error = "HTTP 503: no endpoint";
  bad.ttft_s = 99;  // ignored: failed requests do not enter the statistics
  bad.prompt_tokens = 1000;
  recs.push_back(bad);

  Summary s = Summarize(recs, {"shared-prefix", "random", "", "http://x:1", 10.0, 8.0});
  EXPECT_EQ(s.requests, 4u);
  EXPECT_EQ(s.errors, 1u);
  EXPECT_DOUBLE_EQ(s.ttft_p50_s, 2.0);
  EXPECT_DOUBLE_EQ(s.ttft_mean_s, 2.0);
  EXPECT_DOUBLE_EQ(s.ttft_p90_s, 2.8);
  EXPECT_DOUBLE_EQ(s.itl_p50_s, 0.2);  // pooled gaps {0.1, 0.2, 0.3}
  EXPECT_DOUBLE_EQ(s.e2e_p50_s, 3.0);
  EXPECT_EQ(s.prompt_tokens, 400);
  EXPECT_EQ(s.cached_tokens, 200);
  EXPECT_DOUBLE_EQ(s.cached_token_ratio, 0.5);
  EXPECT_DOUBLE_EQ(s.throughput_rps, 3.0 / 8.0);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 12.0 / 8.0);
  EXPECT_EQ(s.endpoints.at("a"), 2u);
  EXPECT_EQ(s.endpoints.at("b"), 1u);
}

// Summarize selects its percentiles' ranks in place instead of sorting each sample; the
// values must be exactly those of a full sort (checked on samples with many ties).
TEST(SummaryTest, PercentilesEqualThoseOfTheSortedSampleExactly) {
  std::mt19937_64 rng(5);
  std::vector<RequestRecord> recs;
  std::vector<double> ttft, itl, e2e;
  for (int i = 0; i < 2001; ++i) {
    const double t = static_cast<double>(rng() % 300) / 7.0, e = t + (rng() % 1000) / 3.0;
    std::vector<double> gaps;
    for (uint64_t k = rng() % 9; k > 0; --k) gaps.push_back(static_cast<double>(rng() % 50) / 11.0);
    ttft.push_back(t);
    e2e.push_back(e);
    itl.insert(itl.end(), gaps.begin(), gaps.end());
    recs.push_back(Ok(t, gaps, e, 10, 0));
  }
  auto sorted = [](std::vector<double> v, double q) {  // the definition, by a full sort
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos)), hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  Summary s = Summarize(recs, {"w", "random", "", "", 1.0, 1.0});
  EXPECT_EQ(s.ttft_p50_s, sorted(ttft, 0.50));
  EXPECT_EQ(s.ttft_p90_s, sorted(ttft, 0.90));
  EXPECT_EQ(s.ttft_p99_s, sorted(ttft, 0.99));
  EXPECT_EQ(s.itl_p50_s, sorted(itl, 0.50));
  EXPECT_EQ(s.itl_p90_s, sorted(itl, 0.90));
  EXPECT_EQ(s.e2e_p50_s, sorted(e2e, 0.50));
  EXPECT_EQ(s.e2e_p90_s, sorted(e2e, 0.90));
  for (double q : {0.0, 0.05, 0.37, 0.5, 0.99, 1.0}) EXPECT_EQ(Percentile(itl, q), sorted(itl, q));
}

TEST(SummaryTest, PredictionErrorAgainstObservedTtft) {
  std::vector<RequestRecord> recs = {Ok(1.0, {}, 2.0, 10, 0), Ok(2.0, {}, 3.0, 10, 0),
                                     Ok(4.0, {}, 5.0, 10, 0), Ok(1.0, {}, 2.0, 10, 0)};
  recs[0].predicted_ttft_s = 1.5;  // |err| 0.5, relative 0.5
  recs[1].predicted_ttft_s = 1.0;  // 1.0, 0.5
  recs[2].predicted_ttft_s = 4.0;  // 0, 0
  // recs[3] carries no prediction (direct to a replica): left out.
  Summary s = Summarize(recs, {"shared-prefix", "predicted-ttft", "", "u", 1, 1});
  EXPECT_DOUBLE_EQ(s.prediction_abs_err_p50_s, 0.5);
  EXPECT_DOUBLE_EQ(s.prediction_rel_err_p90, 0.5);
  auto o = SummaryJson(s);
  EXPECT_DOUBLE_EQ(o.at("prediction_abs_err_p50_s").as_double(), 0.5);
  EXPECT_DOUBLE_EQ(RecordJson(recs[0]).at("predicted_ttft_s").as_double(), 1.5);
  EXPECT_TRUE(RecordJson(recs[3]).at("predicted_ttft_s").is_null());

  Summary none = Summarize({Ok(1.0, {}, 2.0, 10, 0)}, {"shared-prefix", "direct", "", "u", 1, 1});
  EXPECT_TRUE(SummaryJson(none).at("prediction_rel_err_p90").is_null());
}

TEST(SummaryTest, JsonShapeHasTheDocumentedFields) {
  Summary s =
      Summarize({Ok(1.0, {}, 2.0, 10, 5)}, {"trace", "predicted-ttft", "slice", "u", 20, 4.0, 8});
  auto o = SummaryJson(s);
  for (const char* key :
       {"workload", "strategy", "label", "requests", "errors", "ttft_p50_s", "ttft_p90_s",
        "ttft_p99_s", "itl_p50_s", "e2e_p50_s", "cached_token_ratio", "duration_s",
        "throughput_rps", "time_scale", "concurrency", "endpoints"}) {
    EXPECT_TRUE(o.contains(key)) << key;
  }
  EXPECT_EQ(o.at("workload").as_string(), "trace");
  EXPECT_EQ(o.at("strategy").as_string(), "predicted-ttft");
  EXPECT_DOUBLE_EQ(o.at("time_scale").as_double(), 20.0);
  EXPECT_EQ(o.at("concurrency").to_number<size_t>(), 8u);
  EXPECT_TRUE(o.at("itl_p50_s").is_null());  // no ITL samples: null, not NaN
  // Serialises to strict JSON (NaN would not parse back).
  auto back = boost::json::parse(boost::json::serialize(o));
  EXPECT_TRUE(back.is_object());

  auto r = RecordJson(Ok(0.5, {0.1, 0.3}, 1.0, 10, 5));
  EXPECT_DOUBLE_EQ(r.at("itl_mean_s").as_double(), 0.2);
  EXPECT_TRUE(r.at("error").is_null());
  for (const char* key : {"id", "session", "turn", "start_s", "ttft_s", "e2e_s", "prompt_tokens",
                          "cached_tokens", "completion_tokens", "endpoint"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
}

TEST(SummaryFileTest, MergeReplacesSameWorkloadAndStrategy) {
  boost::json::object doc;
  auto mk = [](std::string w, std::string strat, double p50) {
    boost::json::object o;
    o["workload"] = w;
    o["strategy"] = strat;
    o["label"] = "";
    o["ttft_p50_s"] = p50;
    return o;
  };
  ASSERT_TRUE(MergeResult(doc, mk("trace", "random", 1.0)).ok());
  ASSERT_TRUE(MergeResult(doc, mk("trace", "predicted-ttft", 0.5)).ok());
  ASSERT_TRUE(MergeResult(doc, mk("trace", "random", 2.0)).ok());
  const auto& arr = doc.at("results").as_array();
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_DOUBLE_EQ(arr[0].as_object().at("ttft_p50_s").as_double(), 2.0);
  EXPECT_EQ(arr[1].as_object().at("strategy").as_string(), "predicted-ttft");

  std::string table = FormatTable(arr);
  EXPECT_NE(table.find("predicted-ttft"), std::string::npos);
  EXPECT_NE(table.find("0.25x"), std::string::npos);  // 0.5 s vs random's 2.0 s

  boost::json::object broken{{"results", 3}};
  EXPECT_FALSE(MergeResult(broken, mk("a", "b", 1)).ok());
}

TEST(SummaryFileTest, FileRoundTrip) {
  auto path = std::filesystem::temp_directory_path() /
              ("kinference_summary_" + std::to_string(::getpid())) / "summary.json";
  std::filesystem::remove_all(path.parent_path());
  boost::json::object a{{"workload", "w"}, {"strategy", "random"}, {"label", ""}};
  boost::json::object b{{"workload", "w"}, {"strategy", "least-loaded"}, {"label", ""}};
  ASSERT_TRUE(MergeIntoSummaryFile(path.string(), a).ok());
  ASSERT_TRUE(MergeIntoSummaryFile(path.string(), b).ok());
  ASSERT_TRUE(MergeIntoSummaryFile(path.string(), a).ok());
  auto doc = ReadSummaryFile(path.string());
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->at("results").as_array().size(), 2u);
  std::filesystem::remove_all(path.parent_path());
}

}  // namespace
}  // namespace kinference::workload
