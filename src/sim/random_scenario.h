// Random scenarios: `kinference simulate --scenario random --seed N --count K`, the
// yardstick for routing on workloads nobody tuned it for (issue #23).
//
// DrawRandomScenario(seed) draws one cluster + workload from families real fleets see,
// one value per axis (docs/simulator.md, "Random scenarios", has the ranges and why):
//   pool       2-64 replicas (log-uniform, so small pools are as common as large ones)
//   profiles   homogeneous (one shipped GPU profile, maybe scaled) or mixed (2-3 kinds,
//              each a shipped GPU profile at a speed of 0.5-2x)
//   arrivals   poisson, bursty (bursts whose requests mix 1-8 prefixes), diurnal (a
//              sin^2 ramp from 0.25x to 1.75x the mean rate and back)
//   prompts    huge-prefixes (1-4 shared prefixes of 8k-48k tokens), zipf-system
//              (8-200 system prompts, Zipf-popular), multiturn (sessions of 2-10 turns),
//              no-reuse (every prompt unique), long-context (32k-128k-token documents,
//              each asked about 1-8 times)
//   outputs    mean 16-1,024 tokens (log-uniform), each request 0.5-1.5x the mean
//   load       30-150% of the pool's nominal capacity (NominalCapacityRps)
//   gateways   1-4 gateway replicas, requests split among them at random
//   restarts   none, or 1 to pool/4 replicas restarting (5-30 s down) mid-run
// The scenario is a pure function of its seed (splitmix64 draws, no other input): the
// same seed gives the same replicas, sessions, arrivals and `line`.
//
// RunRandom simulates every strategy of the plan on every scenario (each on its own fresh
// cluster with the same sessions; the lower bound, sim/bound.h, with them) and tabulates,
// per strategy, the share of scenarios where it is within kRandomTolerance of the best
// strategy on TTFT p50, TTFT p90 and e2e p90, and its worst ratio to the best with that
// scenario's line. "Best" is over the plan's strategies other than the oracle (which reads
// engine internals: it and the bound are reported against the same best, as references).
//
// Sizes: a scenario's requests are capped (kRandomMinRequests..kRandomMaxRequests) so
// that all strategies on one scenario cost a few CPU-seconds (docs/simulator.md).
//
// Thread-safety: DrawRandomScenario and TabulateRandom are pure; RunRandom runs
// simulations on `jobs` threads and joins them before returning.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "sim/simulation.h"
#include "workload/workload.h"

namespace kinference::sim {

inline constexpr double kRandomTolerance = 0.05;  // "within 5% of the best" (issue #23)
inline constexpr size_t kRandomMinRequests = 40;
inline constexpr size_t kRandomMaxRequests = 240;
inline constexpr double kRandomSpanS = 90;  // target span of the arrivals, virtual seconds

struct RandomScenario {
  uint64_t seed = 0;
  std::string line;  // everything drawn, on one line (starts with "seed=N")
  // The family drawn on each axis, e.g. {"prompts", "zipf-system"}, in axis order:
  // pool (small <= 4, medium <= 16, large), profiles, arrivals, prompts, outputs (short
  // < 64 tokens, medium, long > 256), load (under < 0.8, near <= 1.1, over), gateways
  // ("1".."4"), restarts (none, some).
  std::vector<std::pair<std::string, std::string>> families;
  SimOptions options;  // replicas, restarts, routers; strategy and seed set per run
  std::vector<workload::Session> sessions;
  size_t requests = 0;      // turns over all sessions
  double capacity_rps = 0;  // NominalCapacityRps of the pool for this workload
  double rate_rps = 0;      // mean request rate of the arrivals
};

RandomScenario DrawRandomScenario(uint64_t seed);

// A pool's nominal capacity in requests/s for requests with `uncached` prompt tokens to
// prefill over `context` cached ones and `output` tokens out: per replica, 1 / (the
// prefill's engine time + output x the per-token cost of a decode step shared by 16
// sequences), summed. A yardstick for "load", not a prediction: it ignores KV capacity,
// and chunked prefill sharing steps with decodes.
double NominalCapacityRps(const std::vector<ReplicaSpec>& replicas, double uncached, double context,
                          double output);

// One scenario's figures under one strategy (seconds; NaN when no request succeeded).
struct RandomFigures {
  double ttft_p50_s = 0, ttft_p90_s = 0, e2e_p90_s = 0;
  size_t requests = 0, errors = 0;
};

// Per scenario: its line and each strategy's figures, in the plan's strategy order (the
// last column may be "bound": the lower bound's figures).
struct RandomOutcome {
  std::string line;
  std::vector<RandomFigures> figures;
};

// The table: per strategy, the share of scenarios within kRandomTolerance of the best
// non-reference strategy (`references`: names not competing for "best", e.g. oracle,
// bound) on each figure and on all three, and the worst ratio with its figure and line.
// Returns {"strategies": [{strategy, within_ttft_p50, within_ttft_p90, within_e2e_p90,
// within_all, worst_ratio, worst_figure, worst_line}], "scenarios": N}.
boost::json::object TabulateRandom(const std::vector<std::string>& strategies,
                                   const std::vector<RandomOutcome>& outcomes,
                                   const std::vector<std::string>& references);

struct RandomPlan {
  std::vector<std::string> strategies;
  uint64_t seed = 1;  // scenarios seed, seed + 1, ..., seed + count - 1
  size_t count = 1;
  size_t jobs = 2;
  bool native_scrape_intervals = true;                          // as RunPlan
  std::map<std::string, double, std::less<>> strategy_options;  // SimOptions::strategy_options
  // Called after each simulation (serialised, from the simulation threads). May be empty.
  std::function<void(size_t done, size_t total)> on_progress;
};

// Returns {"scenario": "random", "seed", "count", "table": TabulateRandom(...),
// "scenarios": [{seed, line, families, results: {strategy: {ttft_p50_s, ttft_p90_s,
// e2e_p90_s, requests, errors}}}], "wall_s", "simulated_requests"}; the bound is a
// column "bound". Errors: the first failing simulation's status.
Result<boost::json::object> RunRandom(const RandomPlan& plan);

// The table as text: one row per strategy.
std::string FormatRandomTable(const boost::json::object& table);

}  // namespace kinference::sim
