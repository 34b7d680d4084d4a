// Tests of the discrete-event cluster simulation (sim/simulation.h): determinism, that
// routing matters the way it should on shared prefixes, the oracle, restarts, and that
// the router learns about replicas only through scrapes. All in virtual time, small runs.
#include "sim/simulation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/tokenizer.h"
#include "engine/profile.h"
#include "sim/event_queue.h"
#include "workload/report.h"
#include "workload/workload.h"

namespace kinference::sim {
namespace {

engine::HardwareProfile L40s() { return *engine::ProfileByName("l40s-27b-fp8"); }

std::vector<workload::Session> SharedPrefix(size_t n, double rate, uint64_t seed) {
  workload::WorkloadSpec spec;
  spec.name = "shared-prefix";
  spec.sessions = n;
  spec.rate_rps = rate;
  spec.seed = seed;
  auto w = workload::MakeWorkload(spec);
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? *w : std::vector<workload::Session>{};
}

// `n` one-turn sessions sharing one 2,000-token system prompt, one every `gap_s`.
std::vector<workload::Session> OnePrefix(size_t n, double gap_s) {
  std::vector<workload::Session> out;
  for (size_t i = 0; i < n; ++i) {
    workload::Session s;
    s.id = "s" + std::to_string(i);
    s.arrival_s = gap_s * static_cast<double>(i);
    s.system_prompt = SyntheticText(99, 2000);
    s.turns.push_back(workload::Turn{SyntheticText(1000 + i, 50), 8, 0});
    out.push_back(std::move(s));
  }
  return out;
}

SimOptions Options(const std::string& strategy, size_t replicas = 3) {
  SimOptions o;
  o.replicas = MakePool(L40s(), "l40s", replicas);
  o.strategy = strategy;
  o.seed = 7;
  return o;
}

double MedianTtft(const SimResult& r) {
  return workload::Summarize(r.Records(), workload::RunInfo{}).ttft_p50_s;
}

TEST(EventQueueTest, OrdersByTimeThenSchedulingOrder) {
  EventQueue q;
  q.Push(2.0, EventKind::kScrape, 1);
  q.Push(1.0, EventKind::kScrape, 2);
  q.Push(2.0, EventKind::kScrape, 3);
  q.Push(1.0, EventKind::kScrape, 4);
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.Pop().a);
  EXPECT_EQ(order, (std::vector<uint64_t>{2, 4, 1, 3}));
}

TEST(SimulationTest, SameSeedGivesIdenticalResults) {
  auto sessions = SharedPrefix(24, 0.2, 3);
  auto o = Options("predicted-ttft");
  o.scrape_jitter_s = 0.3;
  auto a = Simulate(sessions, o);
  auto b = Simulate(sessions, o);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->requests.size(), 24u);
  ASSERT_EQ(a->requests.size(), b->requests.size());
  for (size_t i = 0; i < a->requests.size(); ++i) {
    const auto& x = a->requests[i].record;
    const auto& y = b->requests[i].record;
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.endpoint, y.endpoint);
    EXPECT_EQ(x.ttft_s, y.ttft_s);
    EXPECT_EQ(x.e2e_s, y.e2e_s);
    EXPECT_EQ(x.cached_tokens, y.cached_tokens);
  }
  EXPECT_EQ(a->events, b->events);
  EXPECT_EQ(a->duration_s, b->duration_s);
}

TEST(SimulationTest, PredictedTtftBeatsRandomOnSharedPrefixAndOracleIsNoWorse) {
  auto sessions = SharedPrefix(60, 0.05, 1);
  auto random = Simulate(sessions, Options("random"));
  auto ours = Simulate(sessions, Options("predicted-ttft"));
  auto oracle = Simulate(sessions, Options("oracle"));
  ASSERT_TRUE(random.ok() && ours.ok() && oracle.ok());
  for (const auto* r : {&*random, &*ours, &*oracle}) {
    ASSERT_EQ(r->requests.size(), 60u);
    for (const auto& q : r->requests) EXPECT_TRUE(q.record.ok()) << q.record.error;
  }
  // Random spreads the 24 prefixes over 3 replicas that hold ~9 each: mostly misses
  // (a full 16,256-token prefill, ~6.8 s); cache-aware routing mostly hits (~0.3 s).
  EXPECT_GT(MedianTtft(*random), 5.0);
  EXPECT_LT(MedianTtft(*ours), 1.0);
  EXPECT_LE(MedianTtft(*oracle), MedianTtft(*random));
  // The oracle's TTFT estimate is the engine's own cost model: close to what happens.
  std::vector<double> errors;
  for (const auto& q : oracle->requests)
    errors.push_back(std::abs(q.predicted_ttft_s - q.gateway_ttft_s));
  EXPECT_LT(workload::Percentile(errors, 0.5), 0.05);
}

TEST(SimulationTest, RestartEmptiesTheCache) {
  auto sessions = OnePrefix(20, 10.0);  // one request every 10 s; each takes ~1.5 s
  auto o = Options("prefix", 1);
  o.restarts.push_back(RestartSpec{"l40s/0", 104.0, 2.0});  // idle then; back at 106 s
  auto r = Simulate(sessions, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->requests.size(), 20u);
  for (const auto& q : r->requests) {
    ASSERT_TRUE(q.record.ok()) << q.record.error;
    const double t = q.record.start_s;
    if (t == 0 || t == 110) {
      EXPECT_EQ(q.record.cached_tokens, 0) << q.record.id;  // first after (re)start
    } else {
      EXPECT_GT(q.record.cached_tokens, 1900) << q.record.id;
    }
  }
}

TEST(SimulationTest, RestartFailsInFlightRequests) {
  auto sessions = OnePrefix(3, 10.0);
  auto o = Options("round-robin", 1);
  o.restarts.push_back(RestartSpec{"l40s/0", 10.1, 1.0});  // during the second request
  auto r = Simulate(sessions, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->requests.size(), 3u);
  size_t failed = 0;
  for (const auto& q : r->requests) failed += q.record.ok() ? 0 : 1;
  EXPECT_EQ(failed, 1u);
}

TEST(SimulationTest, RouterSeesMetricsOnlyThroughScrapes) {
  auto sessions = SharedPrefix(12, 0.2, 5);
  auto fast = Options("least-load");
  fast.scrape_interval_s = 1.0;
  auto slow = fast;
  slow.scrape_interval_s = 10.0;
  auto never = fast;
  never.scrape_interval_s = 1e9;  // the first scrape's phase lies beyond the run
  auto a = Simulate(sessions, fast);
  auto b = Simulate(sessions, slow);
  auto c = Simulate(sessions, never);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_GT(a->scrapes, b->scrapes);
  EXPECT_EQ(c->scrapes, 0u);
  double max_fast = -1, max_slow = -1;
  for (const auto& q : a->requests) max_fast = std::max(max_fast, q.metrics_age_s);
  for (const auto& q : b->requests) max_slow = std::max(max_slow, q.metrics_age_s);
  for (const auto& q : c->requests) EXPECT_EQ(q.metrics_age_s, -1);
  EXPECT_LE(max_fast, 1.0);
  EXPECT_GT(max_slow, 1.0);
  EXPECT_LE(max_slow, 10.0);
}

TEST(SimulationTest, ClosedLoopKeepsConcurrencyAndMultiturnUsesReplies) {
  workload::WorkloadSpec spec;
  spec.name = "multiturn";
  spec.sessions = 4;
  auto w = workload::MakeWorkload(spec);
  ASSERT_TRUE(w.ok());
  auto o = Options("predicted-ttft");
  o.concurrency = 2;
  auto r = Simulate(*w, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->requests.size(), 4 * workload::kMultiturnTurns);
  for (const auto& q : r->requests) {
    ASSERT_TRUE(q.record.ok());
    EXPECT_EQ(q.record.completion_tokens, workload::kMultiturnOutputTokens);
    // Later turns re-send the history: most of the prompt is a cache hit.
    if (q.record.turn > 0) {
      EXPECT_GT(q.record.cached_tokens, q.record.prompt_tokens / 2);
      // The router learned the previous reply (Router::OnCompletionText): its expected
      // hit covers what the engine cached (without it, one reply, ~160 tokens, short), up to the
      // learned chars-per-token ratio's error (measured up to 2.5% on early turns).
      EXPECT_GT(q.matched_tokens, q.record.cached_tokens - 64) << q.record.id;
      EXPECT_LT(q.matched_tokens, q.record.cached_tokens + 0.05 * q.record.prompt_tokens);
    }
  }
}

TEST(SimulationTest, RejectsBadOptions) {
  auto sessions = SharedPrefix(2, 0, 1);                             // closed-loop sessions
  EXPECT_FALSE(Simulate(sessions, Options("predicted-ttft")).ok());  // no concurrency
  auto o = Options("no-such-strategy");
  o.concurrency = 1;
  EXPECT_EQ(Simulate(sessions, o).status().code(), ErrorCode::kInvalidArgument);
  SimOptions empty;
  empty.concurrency = 1;
  EXPECT_FALSE(Simulate(sessions, empty).ok());
}

}  // namespace
}  // namespace kinference::sim
