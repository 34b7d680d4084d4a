// Tests of the random scenarios (sim/random_scenario.h): reproducible from the seed, every
// family drawn, within the stated ranges, and the table's arithmetic.
#include "sim/random_scenario.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

namespace kinference::sim {
namespace {

std::string Fingerprint(const RandomScenario& s) {
  std::string out = s.line;
  for (const auto& r : s.options.replicas)
    out += "|" + r.id + ":" + std::to_string(r.profile.prefill_s_per_token);
  for (const auto& r : s.options.restarts) out += "|" + r.replica + std::to_string(r.at_s);
  for (const auto& session : s.sessions) {
    out += "|" + std::to_string(session.arrival_s.value_or(-1)) + session.system_prompt;
    for (const auto& t : session.turns)
      out += t.user_text + std::to_string(t.max_tokens) + std::to_string(t.think_time_s);
  }
  return out;
}

TEST(RandomScenarioTest, IsReproducibleFromItsSeed) {
  for (uint64_t seed : {1u, 2u, 77u}) {
    RandomScenario a = DrawRandomScenario(seed), b = DrawRandomScenario(seed);
    EXPECT_EQ(Fingerprint(a), Fingerprint(b)) << seed;
    EXPECT_EQ(a.line.rfind("seed=" + std::to_string(seed) + " ", 0), 0u) << a.line;
    EXPECT_EQ(a.line.find('\n'), std::string::npos);
  }
  EXPECT_NE(DrawRandomScenario(1).line, DrawRandomScenario(2).line);
}

TEST(RandomScenarioTest, DrawsEveryFamilyWithinItsRanges) {
  std::map<std::string, std::set<std::string>> seen;
  std::set<size_t> pool_sizes;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    RandomScenario s = DrawRandomScenario(seed);
    for (const auto& [axis, family] : s.families) seen[axis].insert(family);
    const size_t n = s.options.replicas.size();
    pool_sizes.insert(n);
    ASSERT_GE(n, 2u) << s.line;
    ASSERT_LE(n, 64u) << s.line;
    ASSERT_GE(s.options.routers, 1u);
    ASSERT_LE(s.options.routers, 4u);
    EXPECT_GE(s.rate_rps, 0.3 * s.capacity_rps - 1e-9) << s.line;
    EXPECT_LE(s.rate_rps, 1.5 * s.capacity_rps + 1e-9) << s.line;
    EXPECT_GE(s.requests, kRandomMinRequests) << s.line;
    EXPECT_LE(s.requests, kRandomMaxRequests + 10) << s.line;  // + a session's last turns
    for (const auto& r : s.options.restarts) {
      bool known = false;
      for (const auto& rep : s.options.replicas) known = known || rep.id == r.replica;
      EXPECT_TRUE(known) << r.replica;
    }
    double last = -1;
    for (const auto& session : s.sessions) {
      ASSERT_TRUE(session.arrival_s.has_value());
      EXPECT_GE(*session.arrival_s, last) << s.line;  // arrivals in order
      last = *session.arrival_s;
    }
  }
  const std::map<std::string, std::set<std::string>> want = {
      {"pool", {"small", "medium", "large"}},
      {"profiles", {"homogeneous", "mixed"}},
      {"arrivals", {"poisson", "bursty", "diurnal"}},
      {"prompts", {"huge-prefixes", "zipf-system", "multiturn", "no-reuse", "long-context"}},
      {"outputs", {"short", "medium", "long"}},
      {"load", {"under", "near", "over"}},
      {"gateways", {"1", "2", "3", "4"}},
      {"restarts", {"none", "some"}}};
  EXPECT_EQ(seen, want);
  EXPECT_TRUE(pool_sizes.count(2) && *pool_sizes.rbegin() >= 48);
}

TEST(RandomScenarioTest, SharedPromptsAreReallyShared) {
  // A population with shared text puts the same text in several requests' prompts (the
  // prefix caches have something to reuse); no-reuse never repeats a prompt.
  size_t checked = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    RandomScenario s = DrawRandomScenario(seed);
    std::string family;
    for (const auto& [axis, f] : s.families)
      if (axis == "prompts") family = f;
    std::map<std::string, int> heads;
    for (const auto& session : s.sessions) {
      const std::string& text =
          session.system_prompt.empty() ? session.turns[0].user_text : session.system_prompt;
      ++heads[text.substr(0, 200)];
    }
    int most = 0;
    for (const auto& [h, c] : heads) most = std::max(most, c);
    if (family == "no-reuse") {
      EXPECT_EQ(most, 1) << s.line;
      ++checked;
    } else if (family == "huge-prefixes" || family == "zipf-system") {
      EXPECT_GT(most, 1) << s.line;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10u);
}

TEST(RandomScenarioTest, NominalCapacityScalesWithThePoolAndItsSpeed) {
  RandomScenario s = DrawRandomScenario(5);
  std::vector<ReplicaSpec> one(s.options.replicas.begin(), s.options.replicas.begin() + 1);
  std::vector<ReplicaSpec> two = {one[0], one[0]};
  const double c1 = NominalCapacityRps(one, 2000, 0, 100);
  EXPECT_NEAR(NominalCapacityRps(two, 2000, 0, 100), 2 * c1, 1e-9);
  EXPECT_LT(NominalCapacityRps(one, 8000, 0, 100), c1);  // more to prefill: fewer per second
  EXPECT_LT(NominalCapacityRps(one, 2000, 0, 400), c1);  // more to decode: fewer per second
}

RandomFigures F(double p50, double p90, double e90) {
  RandomFigures f;
  f.ttft_p50_s = p50;
  f.ttft_p90_s = p90;
  f.e2e_p90_s = e90;
  return f;
}

TEST(RandomScenarioTest, TableCountsSharesWithinFivePercentAndTheWorstRatio) {
  const std::vector<std::string> strategies = {"a", "b", "oracle"};
  std::vector<RandomOutcome> outcomes = {
      {"s1", {F(1.0, 2.0, 10.0), F(1.04, 2.2, 10.0), F(0.5, 0.5, 0.5)}},
      {"s2", {F(3.0, 3.0, 30.0), F(1.0, 1.0, 10.0), F(0.1, 0.1, 1.0)}},
      {"s3", {F(NAN, NAN, NAN), F(1.0, 1.0, 1.0), F(1.0, 1.0, 1.0)}}};
  auto t = TabulateRandom(strategies, outcomes, {"oracle"});
  EXPECT_EQ(t["scenarios"].as_uint64(), 3u);
  const auto& rows = t["strategies"].as_array();
  const auto& a = rows[0].as_object();
  const auto& b = rows[1].as_object();
  // a: best everywhere on s1, 3x behind on s2, nothing served on s3.
  EXPECT_DOUBLE_EQ(a.at("within_ttft_p50").as_double(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(a.at("within_all").as_double(), 1.0 / 3);
  EXPECT_TRUE(a.at("worst_ratio").is_null());  // infinite
  EXPECT_EQ(a.at("worst_line").as_string(), "s3");
  // b: within 5% on s1's TTFT p50 (1.04) but not its p90 (1.10); best on s2 and s3; the
  // oracle is a reference and never the best.
  EXPECT_DOUBLE_EQ(b.at("within_ttft_p50").as_double(), 1.0);
  EXPECT_DOUBLE_EQ(b.at("within_ttft_p90").as_double(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(b.at("within_all").as_double(), 2.0 / 3);
  EXPECT_NEAR(b.at("worst_ratio").as_double(), 1.1, 1e-12);
  EXPECT_EQ(b.at("worst_figure").as_string(), "ttft_p90");
  EXPECT_EQ(b.at("worst_line").as_string(), "s1");
}

TEST(RandomScenarioTest, RunIsDeterministic) {
  RandomPlan plan;
  plan.strategies = {"round-robin", "predicted-ttft"};
  plan.seed = 3;
  plan.count = 2;
  plan.jobs = 2;
  auto a = RunRandom(plan);
  plan.jobs = 1;
  auto b = RunRandom(plan);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(boost::json::serialize((*a)["scenarios"]), boost::json::serialize((*b)["scenarios"]));
  EXPECT_EQ(boost::json::serialize((*a)["table"]), boost::json::serialize((*b)["table"]));
  const auto& s0 = (*a)["scenarios"].as_array()[0].as_object();
  EXPECT_EQ(s0.at("line").as_string(), DrawRandomScenario(3).line);
  const auto& results = s0.at("results").as_object();
  ASSERT_TRUE(results.contains("bound"));
  // No routing beats the lower bound.
  for (const char* s : {"round-robin", "predicted-ttft"})
    EXPECT_LE(results.at("bound").at("ttft_p50_s").as_double(),
              results.at(s).at("ttft_p50_s").as_double());
}

}  // namespace
}  // namespace kinference::sim
