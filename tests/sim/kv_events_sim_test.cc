// The simulator's precise mode (SimOptions::kv_events): engines publish vLLM's KV events,
// the router matches each request's engine block keys against them.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/profile.h"
#include "sim/simulation.h"
#include "workload/workload.h"

namespace kinference::sim {
namespace {

std::vector<workload::Session> SharedPrefix(size_t n, double rate) {
  workload::WorkloadSpec spec;
  spec.name = "shared-prefix";
  spec.sessions = n;
  spec.rate_rps = rate;
  spec.seed = 3;
  auto w = workload::MakeWorkload(spec);
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? *w : std::vector<workload::Session>{};
}

SimOptions Options(bool kv_events, const std::string& strategy = "prefix") {
  SimOptions o;
  o.replicas = MakePool(*engine::ProfileByName("l40s-27b-fp8"), "l40s", 3);
  o.strategy = strategy;
  o.seed = 7;
  o.kv_events = kv_events;
  return o;
}

// Mean |predicted hit - hit the engine reported|, tokens, over successful requests.
double MeanHitError(const SimResult& r) {
  double sum = 0;
  size_t n = 0;
  for (const auto& q : r.requests) {
    if (!q.record.ok()) continue;
    sum += std::abs(q.matched_tokens - q.record.cached_tokens);
    ++n;
  }
  return n ? sum / static_cast<double>(n) : -1;
}

TEST(KvEventsSimTest, PreciseIndexPredictsTheEnginesOwnHit) {
  auto sessions = SharedPrefix(40, 0.05);
  auto approx = Simulate(sessions, Options(false));
  auto precise = Simulate(sessions, Options(true));
  ASSERT_TRUE(approx.ok() && precise.ok());
  EXPECT_EQ(approx->kv_batches, 0u);
  EXPECT_GT(precise->kv_batches, 0u);
  size_t exact = 0, ok = 0;
  for (const auto& q : precise->requests) {
    ASSERT_TRUE(q.record.ok()) << q.record.error;
    EXPECT_TRUE(q.precise) << q.record.id;
    ++ok;
    if (q.matched_tokens == q.record.cached_tokens) ++exact;
  }
  // At light load nothing changes a cache between the decision and the engine's own
  // lookup: the router's hit is the engine's, to the token.
  EXPECT_EQ(exact, ok);
  EXPECT_LT(MeanHitError(*precise), MeanHitError(*approx));
  for (const auto& q : approx->requests) EXPECT_FALSE(q.precise);
}

TEST(KvEventsSimTest, SameSeedSameResultsInPreciseMode) {
  auto sessions = SharedPrefix(20, 0.1);
  auto a = Simulate(sessions, Options(true, "predicted-ttft"));
  auto b = Simulate(sessions, Options(true, "predicted-ttft"));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->requests.size(), b->requests.size());
  for (size_t i = 0; i < a->requests.size(); ++i) {
    EXPECT_EQ(a->requests[i].record.endpoint, b->requests[i].record.endpoint);
    EXPECT_EQ(a->requests[i].record.ttft_s, b->requests[i].record.ttft_s);
  }
  EXPECT_EQ(a->kv_batches, b->kv_batches);
}

TEST(KvEventsSimTest, RestartedReplicaFallsBackUntilItsFeedReturns) {
  auto sessions = SharedPrefix(40, 0.05);
  auto o = Options(true);
  o.restarts.push_back(RestartSpec{"l40s/0", 200, 30});
  auto r = Simulate(sessions, o);
  ASSERT_TRUE(r.ok());
  size_t fallback = 0;
  for (const auto& q : r->requests) {
    if (!q.record.ok()) continue;
    if (!q.precise) ++fallback;
    // A request dispatched before the restart or after the feed came back is matched
    // precisely; fallback happens only in between (l40s/0 unhealthy: not a candidate,
    // so the chosen endpoint's feed was live and every decision stays precise).
  }
  EXPECT_EQ(fallback, 0u);
  // After the restart, l40s/0's empty cache is known at once (AllBlocksCleared): no
  // request is predicted a hit there that the engine then misses.
  for (const auto& q : r->requests) {
    if (!q.record.ok() || q.record.endpoint != "l40s/0" || q.record.start_s < 230) continue;
    EXPECT_LE(q.matched_tokens, q.record.cached_tokens) << q.record.id;
  }
}

// Sum of cached over sum of prompt tokens of the successful requests (as the scenario
// reports' cached_token_ratio).
double CachedTokenRatio(const SimResult& r) {
  double cached = 0, prompt = 0;
  for (const auto& q : r.requests) {
    if (!q.record.ok()) continue;
    cached += static_cast<double>(q.record.cached_tokens);
    prompt += static_cast<double>(q.record.prompt_tokens);
  }
  return prompt > 0 ? cached / prompt : 0;
}

// Several gateway replicas (docs/kv-events.md): each approximate index knows only what its
// own gateway sent, so three gateways scatter a shared prefix over the pool; with every
// engine's events each gateway knows what every engine holds, and the pool keeps about
// the hit one gateway gets.
TEST(KvEventsSimTest, SeveralGatewaysKeepThePrefixHitOnlyWithThePreciseIndex) {
  auto sessions = SharedPrefix(72, 0.2);
  for (const std::string strategy : {"predicted-ttft", "prefix"}) {
    auto run = [&](size_t routers, bool kv_events) {
      auto o = Options(kv_events, strategy);
      o.routers = routers;
      auto r = Simulate(sessions, o);
      EXPECT_TRUE(r.ok()) << r.status().message();
      return r.ok() ? CachedTokenRatio(*r) : 0.0;
    };
    const double one = run(1, false);
    const double approximate = run(3, false);
    const double precise = run(3, true);
    // The precise index's hit with three gateways is clearly above the approximate one's
    // (a quarter more, at least) and within a tenth of one gateway's.
    EXPECT_GT(precise, 1.25 * approximate) << strategy;
    EXPECT_GT(precise, 0.9 * one) << strategy;
    EXPECT_LT(approximate, one) << strategy;
  }
}

}  // namespace
}  // namespace kinference::sim
