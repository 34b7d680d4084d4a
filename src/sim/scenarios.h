// Scenarios: the named simulation experiments of `kinference simulate` and their runner.
//
// A scenario is a list of conditions (workload, cluster, load); the runner simulates
// every condition for every strategy and trial, each strategy on its own identical,
// fresh cluster with the same arrivals (trial t uses workload seed `seed + t` for every
// strategy), and summarises them. Parameters and the published figures they are set
// beside are in docs/simulator.md. Scenarios:
//   light-load     3 x l40s-27b-fp8, open-loop Poisson kLightLoadRateRps; shared-prefix,
//                  multiturn, independent.
//   capacity       3 x l40s-27b-fp8, closed loop at concurrency 4, 8, 16, 24, 32;
//                  shared-prefix (TTFT SLO 8 s; kCapacityWarmup warm-up requests, then
//                  max(72, 3 x concurrency) measured) and multiturn (4 s; max(8, c)
//                  sessions of 8 turns).
//   trace          kTraceRequests lines of the Mooncake conversation trace on
//                  kTraceReplicas x h100-27b-fp8, at its own rate (speed 1) and 1.5x, 2x
//                  (where random breaks); trial t replays the slice starting at line
//                  t x kTraceSliceStride (at most kTraceSlices trials: the trace fixes the
//                  arrivals, so trials differ by the part of the hour they replay).
//   heterogeneous  2 x l40s-27b-fp8 + 1 x h100-27b-fp8 (two pools), open loop.
//   restarts       3 x l40s-27b-fp8; one replica restarts (empty cache), one joins, one
//                  leaves during the run.
//   kv-events      3 x l40s-27b-fp8 behind 1 or kKvEventsRouters gateway replicas:
//                  approximate vs precise (KV-event) prefix index, shared-prefix (with and
//                  without a replica restart) and multiturn; the trace on 12 x h100 at
//                  1.5x with one gateway; strategies prefix, predicted-ttft, dynamo only.
//   large-prefix   4 x l40s-27b-fp8, one 32,000-token prefix shared by every request, open
//                  loop at 0.25, 0.5, 1 request/s: affinity alone piles every decode on one
//                  replica.
//   burst          4 x l40s-27b-fp8, bursts of 8, 24, 48 requests within 10 ms sharing one
//                  new 16,000-token prefix each (before any scrape can show them).
//   overload       3 x l40s-27b-fp8, shared-prefix at 2.5 and 5 requests/s (above the ~1.7
//                  the pool serves), engines queueing vs. the gateway queueing
//                  (AdmissionOptions, kAdmissionAwaiting per endpoint).
//   small-pool     2 x l40s-27b-fp8 at low load (kSmallPoolRateRps): shared-prefix, multiturn.
//   routers        8 x l40s-27b-fp8 behind 1 or 4 gateway replicas (own router and scrapes
//                  each, requests split at random): bursts of 24, shared-prefix at 1/s.
//   cost-shape     4 x cpu-qwen2-tiny (attention-dominated cost, unlike the predictor's
//                  prior), multiturn at kCostShapeRateRps: the predictor learning the shape
//                  vs. speed only (predicted-ttft alone reruns for the latter).
// Every strategy scrapes at its own router's default interval (NativeScrapeIntervalS)
// unless RunPlan::native_scrape_intervals is off.
// Result fields per (condition, strategy): scenario, workload, label, strategy, trials,
// requests, errors, ttft_{p50,p90,p99}_s, e2e_{p50,p90}_s, itl_{p50,p90}_s,
// bound_{ttft,e2e}_{p50,p90}_s (the lower bound on the same requests, sim/bound.h),
// gateway_wait_p90_s, rejected (429/503 at the gateway), retried, routers,
// cached_token_ratio, throughput_rps, prediction_abs_err_p50_s, prediction_rel_err_p90,
// ttft_quantiles_s (TTFT at 0, 5, ..., 100 %), ttft_p50_s_trials, ttft_p90_s_trials,
// e2e_p50_s_trials, e2e_p90_s_trials, itl_p90_s_trials (per trial, in trial order, for
// paired comparisons: every strategy
// runs trial t on the same arrivals),
// and for closed-loop conditions concurrency, ttft_slo_s, slo_fraction, goodput_rpm
// (requests meeting the SLO per minute of run, mean over trials), goodput_rpm_trials,
// goodput_window_rpm and slo_met
// (slo_fraction >= 0.9). Percentiles pool the requests of all trials (workload/report.h).
//
// Thread-safety: RunScenario runs independent simulations on `jobs` threads and joins
// them before returning; the functions are otherwise pure.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/simulation.h"
#include "workload/workload.h"

namespace kinference::sim {

// Chosen parameters (docs/simulator.md explains each choice).
inline constexpr double kLightLoadRateRps = 0.05;
inline constexpr double kSharedPrefixSloS = 8.0;  // published capacity thresholds
inline constexpr double kMultiturnSloS = 4.0;
inline constexpr double kSloFraction = 0.9;
inline constexpr size_t kCapacityWarmup = 48;
inline constexpr size_t kTraceReplicas = 12;
inline constexpr size_t kTraceRequests = 600;
inline constexpr size_t kTraceSliceStride = 4000;  // lines: ~20 min of the hour-long trace
inline constexpr size_t kTraceSlices = 3;          // 12,031 lines hold three such slices
inline constexpr size_t kLargePrefixReplicas = 4;
inline constexpr size_t kLargePrefixTokens = 32000;
inline constexpr size_t kLargePrefixRequests = 150;
inline constexpr size_t kBurstReplicas = 4;
inline constexpr size_t kBursts = 3;
inline constexpr double kBurstIntervalS = 90;
inline constexpr double kBurstSpreadS = 0.01;
inline constexpr size_t kOverloadRequests = 240;
inline constexpr size_t kAdmissionAwaiting = 2;
inline constexpr double kSmallPoolRateRps = 0.03;
inline constexpr size_t kRoutersReplicas = 8;
inline constexpr size_t kRouterReplicas = 4;
inline constexpr size_t kRoutersRequests = 150;
inline constexpr size_t kKvEventsRouters = 3;  // issue #17: precise vs approximate, 1 and 3
inline constexpr size_t kCostShapeReplicas = 4;
inline constexpr size_t kCostShapeSessions = 40;
inline constexpr double kCostShapeRateRps = 0.5;

struct Condition {
  std::string workload;         // workload name (spec.name)
  std::string label;            // distinguishes conditions of one workload, e.g. "c=16"
  workload::WorkloadSpec spec;  // seed replaced per trial
  SimOptions options;           // strategy and seed replaced per run
  double ttft_slo_s = 0;        // > 0: report goodput against this TTFT threshold
  // Sessions [0, warmup_sessions) are simulated (they fill the caches) but left out of
  // every statistic; goodput's window runs from the first measured request's start.
  size_t warmup_sessions = 0;
  // > 0: trial t reads the trace from spec.trace_offset + t * trace_offset_step.
  size_t trace_offset_step = 0;
  // Non-empty: only these of the plan's strategies run on this condition (a condition
  // that changes one strategy's configuration need not rerun the others).
  std::vector<std::string> only_strategies;
};

struct Scenario {
  std::string name;
  std::string description;
  std::vector<Condition> conditions;
  size_t max_trials = 0;  // > 0: caps RunPlan::trials (deterministic inputs)
  // Non-empty: of RunPlan::strategies, only these run (a scenario about the prefix
  // index has nothing to say about strategies that ignore it).
  std::vector<std::string> strategies;
};

struct ScenarioParams {
  std::string trace_path;  // Mooncake JSONL for `trace`
  double scale = 1.0;      // multiplies request counts (tests use small scales)
  double network_latency_s = kDefaultNetworkLatencyS;
  double scrape_interval_s = 1.0;
  double scrape_jitter_s = 0;
  double metrics_delay_s = 0;
};

std::vector<std::string> ScenarioNames();
// kNotFound for an unknown name.
Result<Scenario> MakeScenario(const std::string& name, const ScenarioParams& params);

struct RunPlan {
  std::vector<std::string> strategies;
  size_t trials = 3;
  uint64_t seed = 1;
  size_t jobs = 2;  // threads
  // Called after each simulation finishes with the requests of the finished simulations
  // and of all of them (one simulation: one condition x strategy x trial). Calls are
  // serialised (one at a time) but come from the simulation threads. May be empty.
  std::function<void(size_t done_requests, size_t total_requests)> on_progress;
  // Called once per (condition, strategy) with its first trial, after every simulation
  // finished, on the calling thread (e.g. to keep per-request records). May be empty.
  std::function<void(const Condition&, const std::string& strategy, const SimResult& trial0)>
      on_first_trial;
  // Each strategy scrapes at its own router's default (NativeScrapeIntervalS).
  bool native_scrape_intervals = true;
};

// The metrics refresh interval a strategy's own router uses: 50 ms for gie and
// llmd-sticky (the Gateway API Inference Extension endpoint picker's
// --refresh-metrics-interval default, which llm-d's scheduler runs on); `ours` (the
// condition's scrape interval, the Kinference gateway's 1 s by default) otherwise.
double NativeScrapeIntervalS(const std::string& strategy, double ours);

// Summary of one (condition, strategy) over its trials, as a JSON object (fields above).
struct ConditionResult {
  boost::json::object summary;
  std::vector<SimResult> trials;
};

// Runs every condition x strategy x trial. Returns {"scenario", "description",
// "results": [...], "prediction_error": {strategy: {abs_p50_s, rel_p90}}, "wall_s",
// "simulated_requests", "sim_requests_per_wall_s"}. Errors: the first failing
// simulation's or workload's status.
Result<boost::json::object> RunScenario(const Scenario& scenario, const RunPlan& plan);

// The JSON summary of one condition's trials under `strategy`.
boost::json::object Summarize(const std::string& scenario, const Condition& c,
                              const std::string& strategy, const std::vector<SimResult>& trials);

// Strategies of `kinference simulate` by default: every registered Router strategy
// (random, round-robin, least-load, prefix, predicted-ttft, peers') plus "oracle".
std::vector<std::string> DefaultStrategies();

}  // namespace kinference::sim
