// The named scenarios of sim/scenarios.h (their parameters: docs/simulator.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/profile.h"
#include "sim/scenarios.h"

namespace kinference::sim {
namespace {

engine::HardwareProfile Profile(const std::string& name) {
  auto p = engine::ProfileByName(name);
  return p.ok() ? *p : engine::HardwareProfile{};
}

size_t Scaled(double n, const ScenarioParams& p) {
  return std::max<size_t>(2, static_cast<size_t>(std::lround(n * p.scale)));
}

SimOptions BaseOptions(const ScenarioParams& p, std::vector<ReplicaSpec> replicas) {
  SimOptions o;
  o.replicas = std::move(replicas);
  o.network_latency_s = p.network_latency_s;
  o.scrape_interval_s = p.scrape_interval_s;
  o.scrape_jitter_s = p.scrape_jitter_s;
  o.metrics_delay_s = p.metrics_delay_s;
  return o;
}

Condition OpenLoop(const std::string& workload, size_t sessions, double rate, SimOptions o,
                   std::string label = "") {
  Condition c;
  c.workload = workload;
  c.label = std::move(label);
  c.spec.name = workload;
  c.spec.sessions = sessions;
  c.spec.rate_rps = rate;
  c.options = std::move(o);
  return c;
}

Scenario LightLoad(const ScenarioParams& p) {
  Scenario s{"light-load",
             fmt::format("3 x l40s-27b-fp8, open-loop Poisson arrivals at {:g} sessions/s",
                         kLightLoadRateRps),
             {}};
  auto o = BaseOptions(p, MakePool(Profile("l40s-27b-fp8"), "l40s", 3));
  s.conditions.push_back(OpenLoop("shared-prefix", Scaled(72, p), kLightLoadRateRps, o));
  s.conditions.push_back(OpenLoop("multiturn", Scaled(12, p), kLightLoadRateRps, o));
  s.conditions.push_back(OpenLoop("independent", Scaled(36, p), kLightLoadRateRps, o));
  return s;
}

Scenario Capacity(const ScenarioParams& p) {
  Scenario s{"capacity", "3 x l40s-27b-fp8, closed loop at concurrency 4..32", {}};
  auto o = BaseOptions(p, MakePool(Profile("l40s-27b-fp8"), "l40s", 3));
  for (size_t conc : {4, 8, 16, 24, 32}) {
    std::string label = "c=" + std::to_string(conc);
    o.concurrency = conc;
    const size_t measured = Scaled(std::max<size_t>(72, 3 * conc), p);
    const size_t warmup = Scaled(kCapacityWarmup, p);
    Condition sp = OpenLoop("shared-prefix", warmup + measured, 0, o, label);
    sp.warmup_sessions = warmup;
    sp.ttft_slo_s = kSharedPrefixSloS;
    s.conditions.push_back(sp);
    Condition mt = OpenLoop("multiturn", Scaled(std::max<size_t>(8, conc), p), 0, o, label);
    mt.ttft_slo_s = kMultiturnSloS;
    s.conditions.push_back(mt);
  }
  return s;
}

Scenario Trace(const ScenarioParams& p) {
  Scenario s{fmt::format("trace"),
             fmt::format("Mooncake conversation trace, {}-line slices starting at line {} x "
                         "trial (trial 0, 1, 2: three parts of the hour), on {} x h100-27b-fp8, "
                         "at its own rate and faster",
                         Scaled(kTraceRequests, p), kTraceSliceStride, kTraceReplicas),
             {}};
  s.max_trials = kTraceSlices;
  auto o = BaseOptions(p, MakePool(Profile("h100-27b-fp8"), "h100", kTraceReplicas));
  for (double speed : {1.0, 1.5, 2.0}) {
    Condition c =
        OpenLoop("trace", Scaled(kTraceRequests, p), 0, o, fmt::format("speed={:g}", speed));
    c.spec.trace_path = p.trace_path;
    c.spec.speed = speed;
    c.trace_offset_step = kTraceSliceStride;
    s.conditions.push_back(c);
  }
  return s;
}

Scenario Heterogeneous(const ScenarioParams& p) {
  Scenario s{"heterogeneous", "2 x l40s-27b-fp8 + 1 x h100-27b-fp8, open loop", {}};
  auto replicas = MakePool(Profile("l40s-27b-fp8"), "l40s", 2);
  for (auto& r : MakePool(Profile("h100-27b-fp8"), "h100", 1)) replicas.push_back(r);
  auto o = BaseOptions(p, replicas);
  s.conditions.push_back(OpenLoop("shared-prefix", Scaled(72, p), 0.1, o, "rate=0.1"));
  s.conditions.push_back(OpenLoop("multiturn", Scaled(12, p), 0.1, o, "rate=0.1"));
  s.conditions.push_back(OpenLoop("independent", Scaled(36, p), 0.1, o, "rate=0.1"));
  return s;
}

Scenario Restarts(const ScenarioParams& p) {
  Scenario s{"restarts",
             "3 x l40s-27b-fp8 (+ l40s/3 joining) at 0.05 sessions/s; l40s/0 restarts (30 s down, "
             "empty cache) "
             "at 1/3 of the run, l40s/3 joins at 1/2, l40s/1 leaves at 2/3",
             {}};
  const size_t n = Scaled(96, p);
  const double rate = kLightLoadRateRps;
  const double span = static_cast<double>(n) / rate;
  auto replicas = MakePool(Profile("l40s-27b-fp8"), "l40s", 4);
  replicas[3].join_at_s = span / 2;
  replicas[1].leave_at_s = 2 * span / 3;
  auto o = BaseOptions(p, replicas);
  o.restarts.push_back(RestartSpec{"l40s/0", span / 3, 30});
  s.conditions.push_back(OpenLoop("shared-prefix", n, rate, o, "restart+join+leave"));
  return s;
}

// One 32,000-token prefix shared by every request (+ 256 unique tokens, 256 out): a
// long system prompt or document every user shares, at a moderate rate.
Scenario LargePrefix(const ScenarioParams& p) {
  Scenario s{"large-prefix",
             fmt::format("{} x l40s-27b-fp8, one {}-token prefix shared by every request, "
                         "open-loop Poisson",
                         kLargePrefixReplicas, kLargePrefixTokens),
             {}};
  auto o = BaseOptions(p, MakePool(Profile("l40s-27b-fp8"), "l40s", kLargePrefixReplicas));
  for (double rate : {0.25, 0.5, 1.0}) {
    Condition c = OpenLoop("shared-prefix", Scaled(kLargePrefixRequests, p), rate, o,
                           fmt::format("large rate={:g}", rate));
    c.spec.shared_prefix.prefixes = 1;
    c.spec.shared_prefix.prefix_tokens = kLargePrefixTokens;
    s.conditions.push_back(c);
  }
  return s;
}

// Bursts of requests with one new 16,000-token prefix each, arriving within 10 ms
// (before any scrape can show them), on an idle pool.
Scenario Burst(const ScenarioParams& p) {
  Scenario s{"burst",
             fmt::format("{} x l40s-27b-fp8, bursts of 8, 24, 48 requests within {:g} ms "
                         "sharing one new 16,000-token prefix each, {} bursts {:g} s apart",
                         kBurstReplicas, kBurstSpreadS * 1e3, kBursts, kBurstIntervalS),
             {}};
  auto o = BaseOptions(p, MakePool(Profile("l40s-27b-fp8"), "l40s", kBurstReplicas));
  for (size_t size : {8, 24, 48}) {
    Condition c = OpenLoop("shared-prefix", kBursts * size, 0, o, fmt::format("burst={}", size));
    c.spec.burst_size = size;
    c.spec.burst_interval_s = kBurstIntervalS;
    c.spec.burst_spread_s = kBurstSpreadS;
    c.spec.shared_prefix.prefixes = kBursts;
    s.conditions.push_back(c);
  }
  return s;
}

// Arrivals above what the pool serves, with and without admission control in front.
Scenario Overload(const ScenarioParams& p) {
  Scenario s{"overload",
             "3 x l40s-27b-fp8, shared-prefix Poisson at 1.5x and 3x the pool's capacity "
             "(~1.7 requests/s), engines queueing vs. the gateway queueing (admission: "
             "at most 2 requests per endpoint without a first token)",
             {}};
  auto o = BaseOptions(p, MakePool(Profile("l40s-27b-fp8"), "l40s", 3));
  for (double rate : {2.5, 5.0}) {
    for (bool admission : {false, true}) {
      SimOptions oo = o;
      if (admission) oo.admission.max_awaiting_per_endpoint = kAdmissionAwaiting;
      s.conditions.push_back(
          OpenLoop("shared-prefix", Scaled(kOverloadRequests, p), rate, oo,
                   fmt::format("rate={:g}{}", rate, admission ? " gw-queue" : "")));
    }
  }
  return s;
}

// Low load on a pool of two.
Scenario SmallPool(const ScenarioParams& p) {
  Scenario s{
      "small-pool",
      fmt::format("2 x l40s-27b-fp8, open-loop Poisson at {:g} sessions/s", kSmallPoolRateRps),
      {}};
  auto o = BaseOptions(p, MakePool(Profile("l40s-27b-fp8"), "l40s", 2));
  s.conditions.push_back(OpenLoop("shared-prefix", Scaled(48, p), kSmallPoolRateRps, o, "pool=2"));
  s.conditions.push_back(OpenLoop("multiturn", Scaled(8, p), kSmallPoolRateRps, o, "pool=2"));
  return s;
}

// Several gateway replicas, each with its own router and scrapes, requests split at random.
Scenario Routers(const ScenarioParams& p) {
  Scenario s{"routers",
             fmt::format("{} x l40s-27b-fp8 behind 1 or {} gateway replicas (own router and "
                         "scrapes each; requests split evenly at random): bursts of 24, "
                         "shared-prefix at 1 request/s",
                         kRoutersReplicas, kRouterReplicas),
             {}};
  auto o = BaseOptions(p, MakePool(Profile("l40s-27b-fp8"), "l40s", kRoutersReplicas));
  for (size_t routers : {size_t{1}, kRouterReplicas}) {
    SimOptions oo = o;
    oo.routers = routers;
    Condition b =
        OpenLoop("shared-prefix", kBursts * 24, 0, oo, fmt::format("burst=24 gw={}", routers));
    b.spec.burst_size = 24;
    b.spec.burst_interval_s = kBurstIntervalS;
    b.spec.burst_spread_s = kBurstSpreadS;
    b.spec.shared_prefix.prefixes = kBursts;
    s.conditions.push_back(b);
    s.conditions.push_back(OpenLoop("shared-prefix", Scaled(kRoutersRequests, p), 1.0, oo,
                                    fmt::format("rate=1 gw={}", routers)));
  }
  return s;
}

// A cost curve of another shape than the predictor's prior (engine/profile.cc,
// cpu-qwen2-tiny): learning the shape vs. learning the speed alone.
Scenario CostShape(const ScenarioParams& p) {
  Scenario s{"cost-shape",
             fmt::format("{} x cpu-qwen2-tiny (attention-dominated prefill), multiturn at {:g} "
                         "sessions/s; the router learning the cost's shape vs. its speed only",
                         kCostShapeReplicas, kCostShapeRateRps),
             {}};
  auto o = BaseOptions(p, MakePool(Profile("cpu-qwen2-tiny"), "cpu", kCostShapeReplicas));
  s.conditions.push_back(
      OpenLoop("multiturn", Scaled(kCostShapeSessions, p), kCostShapeRateRps, o, "cpu shape"));
  o.learn_cost_shape = false;
  Condition speed =
      OpenLoop("multiturn", Scaled(kCostShapeSessions, p), kCostShapeRateRps, o, "cpu speed-only");
  speed.only_strategies = {"predicted-ttft"};
  s.conditions.push_back(speed);
  return s;
}

// Precise (KV-event) against approximate prefix index, on the workloads where the
// difference shows: shared prefixes under cache pressure (the approximate index cannot
// see evictions), a replica restart (it cannot see the emptied cache until failed
// connections or a scrape tell it), and several gateway replicas (each approximate index
// knows only what its own gateway sent; with events every gateway knows every engine).
Scenario KvEvents(const ScenarioParams& p) {
  Scenario s{"kv-events",
             fmt::format("3 x l40s-27b-fp8 behind 1 or {} gateway replicas (gw=N; own router "
                         "each, requests split evenly at random); approximate prefix index "
                         "(what each gateway sent where) vs precise (vLLM KV events, exact "
                         "token ids, every gateway receiving every engine's events); "
                         "shared-prefix at 0.2 sessions/s and multiturn at 0.1 sessions/s; "
                         "+restart: l40s/0 restarts (30 s down, empty cache) at 1/3 of the "
                         "run; the Mooncake trace on 12 x h100-27b-fp8 at 1.5x (gw=1)",
                         kKvEventsRouters),
             {}};
  s.strategies = {"prefix", "predicted-ttft", "dynamo"};  // dynamo: its native KV-event mode
  s.max_trials = kTraceSlices;
  for (size_t routers : {size_t{1}, kKvEventsRouters}) {
    for (bool restart : {false, true}) {
      for (bool precise : {false, true}) {
        auto o = BaseOptions(p, MakePool(Profile("l40s-27b-fp8"), "l40s", 3));
        o.kv_events = precise;
        o.routers = routers;
        std::string label = fmt::format("{} gw={}{}", precise ? "precise" : "approximate", routers,
                                        restart ? "+restart" : "");
        const size_t n = Scaled(72, p);
        const double rate = 0.2;
        if (restart) o.restarts.push_back(RestartSpec{"l40s/0", n / rate / 3, 30});
        s.conditions.push_back(OpenLoop("shared-prefix", n, rate, o, label));
        if (!restart) s.conditions.push_back(OpenLoop("multiturn", Scaled(24, p), 0.1, o, label));
      }
    }
  }
  // The Mooncake trace on 12 x h100 (as the trace scenario at 1.5x): many prefixes, a
  // cache that evicts, where a belief built from dispatches drifts from what is held.
  for (bool precise : {false, true}) {
    auto o = BaseOptions(p, MakePool(Profile("h100-27b-fp8"), "h100", kTraceReplicas));
    o.kv_events = precise;
    Condition c = OpenLoop("trace", Scaled(kTraceRequests, p), 0, o,
                           precise ? "precise gw=1 speed=1.5" : "approximate gw=1 speed=1.5");
    c.spec.trace_path = p.trace_path;
    c.spec.speed = 1.5;
    c.trace_offset_step = kTraceSliceStride;
    s.conditions.push_back(c);
  }
  return s;
}

}  // namespace

std::vector<std::string> ScenarioNames() {
  return {"light-load",   "capacity", "trace",    "heterogeneous", "restarts", "kv-events",
          "large-prefix", "burst",    "overload", "small-pool",    "routers",  "cost-shape"};
}

Result<Scenario> MakeScenario(const std::string& name, const ScenarioParams& params) {
  if (name == "light-load") return LightLoad(params);
  if (name == "capacity") return Capacity(params);
  if (name == "trace") return Trace(params);
  if (name == "heterogeneous") return Heterogeneous(params);
  if (name == "restarts") return Restarts(params);
  if (name == "kv-events") return KvEvents(params);
  if (name == "large-prefix") return LargePrefix(params);
  if (name == "burst") return Burst(params);
  if (name == "overload") return Overload(params);
  if (name == "small-pool") return SmallPool(params);
  if (name == "routers") return Routers(params);
  if (name == "cost-shape") return CostShape(params);
  return Status(ErrorCode::kNotFound, "unknown scenario: " + name);
}

}  // namespace kinference::sim
