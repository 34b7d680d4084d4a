// Tests of the scenario runner (sim/scenarios.h): result fields, goodput arithmetic and
// that every named scenario builds.
#include "sim/scenarios.h"

#include <gtest/gtest.h>

namespace kinference::sim {
namespace {

TEST(ScenariosTest, EveryNamedScenarioBuilds) {
  ScenarioParams p;
  p.trace_path = "unused.jsonl";
  for (const auto& name : ScenarioNames()) {
    auto s = MakeScenario(name, p);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_FALSE(s->conditions.empty()) << name;
  }
  EXPECT_EQ(MakeScenario("nope", p).status().code(), ErrorCode::kNotFound);
  auto strategies = DefaultStrategies();
  EXPECT_EQ(strategies.front(), "random");
  EXPECT_EQ(strategies.back(), "oracle");
}

TEST(ScenariosTest, GoodputCountsRequestsMeetingTheSloPerMinute) {
  Condition c;
  c.workload = "shared-prefix";
  c.label = "c=2";
  c.options.concurrency = 2;
  c.ttft_slo_s = 8;
  SimResult t;
  t.duration_s = 120;  // two minutes
  for (double ttft : {1.0, 7.9, 9.0, 2.0}) {
    SimRequest r;
    r.record.ttft_s = ttft;
    r.record.e2e_s = ttft + 10;
    t.requests.push_back(r);
  }
  auto o = Summarize("capacity", c, "random", {t});
  EXPECT_DOUBLE_EQ(o["goodput_rpm"].as_double(), 3.0 / 2.0);
  EXPECT_DOUBLE_EQ(o["slo_fraction"].as_double(), 0.75);
  EXPECT_FALSE(o["slo_met"].as_bool());
  EXPECT_EQ(o["concurrency"].as_uint64(), 2u);
  EXPECT_EQ(o["requests"].as_uint64(), 4u);
}

TEST(ScenariosTest, WarmupSessionsAreLeftOutOfStatistics) {
  Condition c;
  c.workload = "shared-prefix";
  c.options.concurrency = 1;
  c.ttft_slo_s = 8;
  c.warmup_sessions = 1;
  SimResult t;
  t.duration_s = 100;
  for (size_t i = 0; i < 3; ++i) {
    SimRequest r;
    r.session_index = i;
    r.record.start_s = 30.0 * static_cast<double>(i);
    r.record.ttft_s = i == 0 ? 20.0 : 1.0;  // the cold warm-up request misses the SLO
    r.record.e2e_s = 30;
    t.requests.push_back(r);
  }
  auto o = Summarize("capacity", c, "random", {t});
  EXPECT_EQ(o["requests"].as_uint64(), 2u);
  EXPECT_DOUBLE_EQ(o["slo_fraction"].as_double(), 1.0);
  // Window: first measured start (30 s) to last finish (90 s) = one minute.
  EXPECT_DOUBLE_EQ(o["goodput_rpm"].as_double(), 2.0);
}

TEST(ScenariosTest, LightLoadRunsEveryConditionAndStrategy) {
  ScenarioParams p;
  p.scale = 0.15;  // a handful of requests per condition
  auto s = MakeScenario("light-load", p);
  ASSERT_TRUE(s.ok());
  RunPlan plan;
  plan.strategies = {"random", "oracle"};
  plan.trials = 2;
  auto doc = RunScenario(*s, plan);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const auto& results = (*doc)["results"].as_array();
  ASSERT_EQ(results.size(), 3u * 2u);
  for (const auto& v : results) {
    const auto& r = v.as_object();
    for (const char* key : {"scenario", "workload", "strategy", "trials", "requests", "ttft_p50_s",
                            "ttft_p90_s", "e2e_p50_s"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
    EXPECT_EQ(r.at("trials").as_uint64(), 2u);
    EXPECT_EQ(r.at("errors").as_uint64(), 0u);
  }
  EXPECT_TRUE((*doc)["prediction_error"].as_object().contains("random"));
  EXPECT_GT((*doc)["simulated_requests"].as_uint64(), 0u);
}

}  // namespace
}  // namespace kinference::sim
