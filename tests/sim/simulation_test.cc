// Tests of the discrete-event cluster simulation (sim/simulation.h): determinism, that
// routing matters the way it should on shared prefixes, the oracle, restarts, and that
// the router learns about replicas only through scrapes. All in virtual time, small runs.
#include "sim/simulation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/tokenizer.h"
#include "engine/engine.h"
#include "engine/metrics.h"
#include "engine/profile.h"
#include "routing/metrics_snapshot.h"
#include "sim/event_queue.h"
#include "sim/runner.h"
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

TEST(SimulationTest, RestartIsFoundOutFromFailedConnectionsAndScrapes) {
  // Nothing announces the restart: requests sent to the dead replica fail to connect and
  // are retried once on the other one; after 3 failed scrapes the router stops sending.
  auto sessions = OnePrefix(40, 0.5);  // 20 s of requests, one every 0.5 s
  auto o = Options("round-robin", 2);
  o.restarts.push_back(RestartSpec{"l40s/0", 5.0, 10.0});  // down from 5 s to 15 s
  auto r = Simulate(sessions, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->requests.size(), 40u);
  size_t retried_ok = 0, on_dead = 0;
  for (const auto& q : r->requests) {
    const double t = q.record.start_s;
    if (q.retries > 0 && q.record.ok()) {
      ++retried_ok;
      EXPECT_EQ(q.record.endpoint, "l40s/1");
      EXPECT_GT(t, 4.0);
      EXPECT_LT(t, 15.0);
    }
    if (q.record.ok() && q.record.endpoint == "l40s/0" && t > 5.0 && t < 15.0) ++on_dead;
  }
  EXPECT_GE(retried_ok, 2u);  // sent before the third failed scrape
  EXPECT_LE(retried_ok, 6u);  // ~3 s of failed scrapes at one request per second to
                              // l40s/0, plus those in flight at the kill
  EXPECT_EQ(on_dead, 0u);
  // Back at 15 s: requests reach l40s/0 again, with an empty cache.
  bool back = false;
  for (const auto& q : r->requests)
    if (q.record.start_s > 16.0 && q.record.endpoint == "l40s/0") back = true;
  EXPECT_TRUE(back);
}

TEST(SimulationTest, LowerBoundHoldsForEveryStrategy) {
  auto sessions = SharedPrefix(30, 0.3, 2);
  for (std::string s : {"random", "prefix", "predicted-ttft", "oracle"}) {
    auto r = Simulate(sessions, Options(s));
    ASSERT_TRUE(r.ok());
    for (const auto& q : r->requests) {
      ASSERT_TRUE(q.record.ok());
      ASSERT_GT(q.bound_ttft_s, 0);
      EXPECT_GE(q.record.ttft_s, q.bound_ttft_s - 1e-9) << s << " " << q.record.id;
      EXPECT_GE(q.record.e2e_s, q.bound_e2e_s - 1e-9) << s << " " << q.record.id;
    }
  }
  // A request whose prefix nobody sent before is bounded by a cold prefill (~6.8 s).
  auto first = Simulate(SharedPrefix(1, 0.3, 2), Options("random"));
  ASSERT_TRUE(first.ok());
  EXPECT_GT(first->requests[0].bound_ttft_s, 6.0);
  EXPECT_LE(first->requests[0].bound_ttft_s, first->requests[0].record.ttft_s);
}

TEST(SimulationTest, AdmissionQueuesAtTheGatewayInArrivalOrder) {
  auto sessions = OnePrefix(6, 0.001);  // a burst
  auto o = Options("prefix", 1);
  o.admission.max_awaiting_per_endpoint = 1;
  o.admission.max_queue = 3;
  auto r = Simulate(sessions, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->requests.size(), 6u);
  std::vector<std::pair<double, std::string>> served;
  size_t rejected = 0;
  for (const auto& q : r->requests) {
    if (!q.record.ok()) {
      EXPECT_TRUE(q.record.error.starts_with("429")) << q.record.error;
      ++rejected;
      continue;
    }
    served.emplace_back(q.record.start_s + q.gateway_wait_s, q.record.id);
  }
  // One dispatched, three waiting, two turned away.
  EXPECT_EQ(rejected, 2u);
  ASSERT_EQ(served.size(), 4u);
  std::sort(served.begin(), served.end());
  EXPECT_EQ(served[0].second, "s0/0");
  EXPECT_EQ(served[1].second, "s1/0");
  EXPECT_EQ(served[3].second, "s3/0");
  // Each waits for the first token of the one before: queueing happens at the gateway.
  for (const auto& q : r->requests) {
    if (q.record.ok() && q.record.id != "s0/0") {
      EXPECT_GT(q.gateway_wait_s, 0.1);
    }
  }
}

TEST(SimulationTest, GatewayReplicasSplitRequestsByWeight) {
  auto sessions = SharedPrefix(40, 1.0, 4);
  auto o = Options("predicted-ttft");
  o.routers = 3;
  o.router_weights = {1, 0, 3};
  auto r = Simulate(sessions, o);
  ASSERT_TRUE(r.ok());
  std::vector<size_t> per(3, 0);
  for (const auto& q : r->requests) {
    EXPECT_TRUE(q.record.ok());
    ++per[q.gateway];
  }
  EXPECT_EQ(per[1], 0u);
  EXPECT_GT(per[2], per[0]);
  EXPECT_GT(per[0], 0u);
  auto again = Simulate(sessions, o);
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < r->requests.size(); ++i)
    EXPECT_EQ(r->requests[i].record.endpoint, again->requests[i].record.endpoint);
}

TEST(SimulationTest, PrefixRoutingWorksWithoutCachedTokenDetails) {
  // vLLM's default usage has no prompt_tokens_details: the router must not read the
  // missing cached_tokens as "nothing cached" and forget its prefix index.
  auto sessions = SharedPrefix(60, 0.05, 1);
  auto with = Options("predicted-ttft");
  auto without = with;
  without.usage_cached_tokens = false;
  auto a = Simulate(sessions, with);
  auto b = Simulate(sessions, without);
  ASSERT_TRUE(a.ok() && b.ok());
  auto ratio = [](const SimResult& r) {
    return workload::Summarize(r.Records(), workload::RunInfo{}).cached_token_ratio;
  };
  // 60 requests over 24 prefixes: ~22 first sights are cold whatever the routing, so
  // 0.62 is all there is to get; both get it.
  EXPECT_GT(ratio(*b), 0.6);
  EXPECT_NEAR(ratio(*b), ratio(*a), 0.02);
}

// Gateway replicas with one tie-break seed see the same idle candidates in a burst and
// pick alike: each one's k-th request lands where every other one's k-th does. With a
// seed per replica (the gateway's default since router_seed) the burst spreads.
TEST(SimulationTest, GatewayReplicasWithOneSeedHerdInABurst) {
  auto sessions = OnePrefix(16, 0.0005);  // 16 requests within 8 ms, before any scrape
  struct Spread {
    size_t most = 0;  // requests on the busiest endpoint
    size_t used = 0;  // endpoints that got any
  };
  auto spread_of = [&](bool same_seed) {
    auto o = Options("predicted-ttft", 8);
    o.routers = 4;
    o.same_router_seed = same_seed;
    auto r = Simulate(sessions, o);
    EXPECT_TRUE(r.ok());
    std::map<std::string, size_t> per;
    Spread out;
    for (const auto& q : r->requests) out.most = std::max(out.most, ++per[q.record.endpoint]);
    out.used = per.size();
    return out;
  };
  const Spread herded = spread_of(true), spread = spread_of(false);
  // One seed: every gateway's k-th request goes to the same endpoint (4 gateways, so 4
  // there), and only as many endpoints are used as one gateway sent requests.
  EXPECT_GE(herded.most, 4u);
  EXPECT_GT(spread.used, herded.used);
}

// The simulator hands routers SnapshotOf(metrics) instead of rendering /metrics and
// parsing it: the two must agree on every field, at every point of an engine's life.
TEST(SimulationTest, SnapshotOfMatchesParsingTheRenderedPage) {
  engine::Engine e(L40s());
  auto check = [&] {
    const auto& m = e.metrics();
    auto parsed = routing::ParsePrometheusText(
        engine::RenderPrometheus(m, L40s(), L40s().model_name, "0"), L40s().model_name);
    ASSERT_TRUE(parsed.ok());
    routing::MetricsSnapshot direct = internal::SnapshotOf(m, L40s());
    EXPECT_EQ(direct.num_requests_running, parsed->num_requests_running);
    EXPECT_EQ(direct.num_requests_waiting, parsed->num_requests_waiting);
    EXPECT_EQ(direct.kv_cache_usage_perc, parsed->kv_cache_usage_perc);
    EXPECT_EQ(direct.prefix_cache_queries_total, parsed->prefix_cache_queries_total);
    EXPECT_EQ(direct.prefix_cache_hits_total, parsed->prefix_cache_hits_total);
    EXPECT_EQ(direct.prompt_tokens_total, parsed->prompt_tokens_total);
    EXPECT_EQ(direct.generation_tokens_total, parsed->generation_tokens_total);
    EXPECT_EQ(direct.num_preemptions_total, parsed->num_preemptions_total);
    EXPECT_EQ(direct.ttft_seconds_sum, parsed->ttft_seconds_sum);
    EXPECT_EQ(direct.ttft_seconds_count, parsed->ttft_seconds_count);
    EXPECT_EQ(direct.block_size, parsed->block_size);
    EXPECT_EQ(direct.num_gpu_blocks, parsed->num_gpu_blocks);
  };
  check();
  Seconds now = 0;
  for (int i = 0; i < 3; ++i) {
    engine::EngineRequest r;
    r.id = "r" + std::to_string(i);
    r.prompt = Tokenize(SyntheticText(5, 3000) + SyntheticText(6 + i, 100));
    r.max_tokens = 5;
    r.ignore_eos = true;
    r.arrival = now;
    ASSERT_TRUE(e.AddRequest(std::move(r)).ok());
  }
  for (int step = 0; step < 40 && e.HasWork(); ++step) {
    auto d = e.PlanStep(now);
    if (!d) {
      now = *e.NextReadyTime();
      continue;
    }
    now += *d;
    e.CompleteStep();
    check();
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
  auto no_routers = Options("predicted-ttft");
  no_routers.concurrency = 1;
  no_routers.routers = 0;
  EXPECT_FALSE(Simulate(sessions, no_routers).ok());
  auto zero_weights = Options("predicted-ttft");
  zero_weights.concurrency = 1;
  zero_weights.router_weights = {0, 0};
  EXPECT_FALSE(Simulate(sessions, zero_weights).ok());
}

}  // namespace
}  // namespace kinference::sim
