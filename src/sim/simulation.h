// Simulation: one virtual-time run of a cluster of engine models behind one routing core.
//
// What it promises: a discrete-event simulation, deterministic for given sessions and
// options (no wall-clock reads, no threads, no sockets). Events are ordered by (virtual
// time, sequence number). A request's path, as through the real gateway:
//   client sends turn k of a session
//   -> (network latency) gateway: RequestFeatures rendered exactly as the gateway does
//      (api::RenderChatText + routing::ChainedBlockHashes), Router::Pick + OnDispatched
//   -> (network latency) engine: AddRequest with the engine-sim prompt (ChatML template
//      + Tokenize), stepped PlanStep / CompleteStep on the virtual clock
//   -> first token back at the gateway (+ latency): Router::OnFirstToken
//   -> finished at the gateway (+ latency): Router::OnFinished with usage (prompt, cached,
//      completion tokens); the client sees it one more latency later, and sends turn k+1
//      after the turn's think time with the reply text the engine produced.
// What the router sees is only what a real deployment exposes: each replica's /metrics,
// scraped every `scrape_interval_s` (+- uniform jitter) by rendering
// engine::RenderPrometheus and parsing it with routing::ParsePrometheusText, delivered
// with the scrape time after one network latency (+ metrics_delay_s); completions' usage
// (without cached tokens unless usage_cached_tokens) and timings; and its own lifecycle
// bookkeeping. The `oracle` strategy (sim/oracle.h) is the exception, by design: it reads
// engine internals (perfect knowledge, greedy choice). SimRequest::bound_* (sim/bound.h)
// is a lower bound no routing can beat.
//
// Cluster dynamics: replicas may join late, leave (removed from the routers, drain what
// they hold), or restart (killed: their in-flight requests fail; down for `downtime_s`,
// then back with an empty KV cache and reset counters). Nothing announces a restart to
// the routers: as a gateway does, each finds out from failed connections (a request
// without a first token is retried once on another endpoint, as gateway/exchange/exchange_relay.cc
// does), from failed scrapes (unhealthy after 3, healthy at the next success, as
// gateway/upstream/scraper.cc) and from counters going backwards (the prefix index is cleared,
// routing/endpoint_state.h). A failed request ends its session, as in `kinference bench`.
// Gateway replicas (SimOptions::routers) each have their own router and scrapes; a
// request goes through one of them. Admission (AdmissionOptions) queues requests at the
// gateway rather than inside an engine.
//
// Units: seconds of virtual time, tokens. Errors: kInvalidArgument for bad options
// (unknown profile handled by the caller; no replicas; closed-loop sessions without a
// concurrency); per-request failures are recorded in RequestRecord::error.
//
// Thread-safety: Simulate() is reentrant; independent runs may go on separate threads.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/profile.h"
#include "workload/report.h"
#include "workload/workload.h"

namespace kinference::sim {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

struct ReplicaSpec {
  std::string id;    // endpoint id, e.g. "l40s/0"
  std::string pool;  // pool name, e.g. "l40s"
  engine::HardwareProfile profile;
  double join_at_s = 0;        // added to the router (and started) at this time
  double leave_at_s = kNever;  // removed from the router at this time; drains in-flight work
};

struct RestartSpec {
  std::string replica;  // ReplicaSpec::id
  double at_s = 0;
  double downtime_s = 10;  // until it serves again, empty-cached
};

// One-way network latency per hop by default: 1 ms. In-cluster pod-to-pod round trips
// are a fraction of a millisecond; the gateway itself adds 0.3-0.7 ms to the first byte
// (README, measured against a direct connection), so 1 ms per hop errs slow.
inline constexpr double kDefaultNetworkLatencyS = 0.001;

// Queueing at the gateway instead of inside the engines (admission control in front of
// the router). An endpoint is saturated for a gateway while `max_awaiting_per_endpoint`
// of that gateway's requests there have no first token yet; while every healthy
// endpoint is saturated, new requests wait at the gateway in arrival order (FIFO), at
// most `max_queue` of them (more are rejected at once: 429) and at most `max_wait_s`
// each (then 503). A waiting request is routed when an endpoint stops being saturated
// (a first token or a finish), among the unsaturated endpoints, with what the router
// knows then. TTFT and e2e are measured from the client's send, so they include it.
struct AdmissionOptions {
  size_t max_awaiting_per_endpoint = 0;  // 0: off (every request is dispatched at once)
  size_t max_queue = 1024;
  double max_wait_s = 120;
};

struct SimOptions {
  std::vector<ReplicaSpec> replicas;
  std::vector<RestartSpec> restarts;
  std::string strategy = "predicted-ttft";             // a Router strategy name, or "oracle"
  size_t concurrency = 0;                              // > 0: closed loop (arrival_s ignored)
  double network_latency_s = kDefaultNetworkLatencyS;  // one way, per hop
  double scrape_interval_s = 1.0;  // the gateway's default (gateway/config/config.h)
  double scrape_jitter_s = 0;      // each interval +- uniform jitter
  // Extra age of every scrape when the router gets it (a metrics pipeline between the
  // replicas and the gateways), on top of the network latency.
  double metrics_delay_s = 0;
  size_t block_chars = 128;  // prefix-index block (gateway/config/config.h default)
  // Precise mode: every engine publishes vLLM's KV events (engine::StepOutput::kv_events,
  // delivered to every gateway's router one network latency after the step) and the
  // gateway knows each request's token ids (the served model's tokenizer: here
  // engine-sim's) and hashes them into the engine's block keys (kv::BlockHasher), so the
  // router matches requests against what each engine actually caches
  // (Router::SetKvEventsLive). A restarting replica's publisher dies with it (the router
  // falls back to its approximate index) and comes back with AllBlocksCleared as its
  // first batch.
  bool kv_events = false;
  uint64_t seed = 1;          // router tie-breaks and random, scrape phases, jitter
  double time_limit_s = 1e6;  // virtual-time guard: the run stops; unfinished turns unrecorded
  // Gateway replicas, each with its own Router (its own in-flight bookkeeping and prefix
  // index) and its own scrapes of every replica (independent phases): they share only
  // what the replicas' /metrics say. Requests are split among them by `router_weights`
  // (relative shares; empty: equal), per request at random, or per session when
  // `split_by_session` (a client keeps its connection to one gateway replica).
  size_t routers = 1;
  std::vector<double> router_weights;
  bool split_by_session = false;
  // Every gateway replica's router gets the same seed (`seed`), as gateways all started
  // with one fixed seed did before `router_seed` (gateway/config/config.h): on identical
  // views they break ties identically and herd. Default: a seed per replica.
  bool same_router_seed = false;
  // The routers learn the TTFT cost's shape, not only its speed (RouterConfig).
  bool learn_cost_shape = true;
  // Score-term weights for the routers' strategies (RouterConfig::strategy_options).
  std::map<std::string, double, std::less<>> strategy_options;
  // Whether usage carries prompt_tokens_details.cached_tokens (vLLM's
  // --enable-prompt-tokens-details; off by default in vLLM).
  bool usage_cached_tokens = true;
  AdmissionOptions admission;
  // Compute each request's lower bound (SimRequest::bound_*); costs a block hash of every
  // prompt token.
  bool lower_bound = true;
};

// One request as the client and the gateway saw it.
struct SimRequest {
  workload::RequestRecord record;  // client view: start_s, ttft_s, e2e_s, usage, endpoint
  size_t session_index = 0;        // index of its session in the workload
  double predicted_ttft_s = -1;    // Decision::predicted_ttft_s (gateway-side TTFT)
  double gateway_ttft_s = -1;      // dispatch to first token at the gateway (what it predicts)
  double matched_tokens = 0;       // Decision::matched_tokens
  double metrics_age_s = -1;       // age of the chosen endpoint's last scrape; -1: none yet
  bool precise = false;            // Decision::precise (matched with the KV-event index)
  double think_s = 0;              // client think time before it was sent (its turn's)
  size_t gateway = 0;              // the gateway replica it went through
  double gateway_wait_s = 0;       // time queued at the gateway (AdmissionOptions)
  int retries = 0;                 // re-dispatches after a failed connection
  // Lower bound on what any routing could give this request: alone on the fastest
  // replica, with every prefix any earlier request left behind cached (unbounded cache,
  // no queue, no other decode), plus the four network hops (sim/bound.h); -1 when off.
  double bound_ttft_s = -1;
  double bound_e2e_s = -1;
};

struct SimResult {
  std::vector<SimRequest> requests;  // in completion order
  double duration_s = 0;             // first client send to last client finish
  uint64_t events = 0;               // events processed
  uint64_t scrapes = 0;              // snapshots delivered to the router
  uint64_t kv_batches = 0;           // KV-event batches delivered to the router
  std::vector<workload::RequestRecord> Records() const;
};

// `sessions` are generated as they start and released as they end (SessionSource); the
// vector overload wraps its sessions in one.
Result<SimResult> Simulate(const workload::SessionSource& sessions, const SimOptions& opts);
Result<SimResult> Simulate(const std::vector<workload::Session>& sessions, const SimOptions& opts);

// `n` replicas of `profile` named "<pool>/<i>" in pool `pool`.
std::vector<ReplicaSpec> MakePool(const engine::HardwareProfile& profile, const std::string& pool,
                                  size_t n);

}  // namespace kinference::sim
