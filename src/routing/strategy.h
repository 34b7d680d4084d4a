// Strategy: how the Router chooses among candidate endpoints, and the registry that maps
// strategy names to factories so new strategies (ours or peers') need no Router change.
//
// The Router computes one CandidateView per healthy candidate (scraped metrics with their
// age, its own in-flight bookkeeping, the prefix index's match, the TTFT predictor's
// estimate) and hands them to Strategy::Choose, which returns the chosen index and a score
// per candidate (lower is better). Each Router owns one instance per strategy name,
// created on first use by the registered factory, so a strategy may keep state (a
// round-robin cursor, a random generator) and sees the dispatch/finish hooks of the
// requests it routed.
//
// Built-in strategies (strategies_basic.cc): random, round-robin, least-load, prefix,
// predicted-ttft.
//
// Thread-safety: the registry is guarded by a mutex (register at start-up, before Routers
// pick); Strategy instances are not thread-safe and are used on the Router's strand.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "routing/metrics_snapshot.h"
#include "routing/router.h"

namespace kinference::routing {

// What the router knows about one candidate for one request.
struct CandidateView {
  const EndpointInfo* info = nullptr;
  const MetricsSnapshot* metrics = nullptr;  // last scrape; nullptr if never scraped
  double metrics_age_s = -1;                 // -1 if never scraped
  int in_flight = 0;                         // dispatched by this router, not finished
  int awaiting_first_token = 0;              // of those, no first token yet
  double queued_prefill_tokens = 0;          // estimated uncached tokens queued ahead
  double running_seqs = 0;                   // estimated sequences decoding
  double matched_tokens = 0;                 // expected prefix-cache hit for this request
  bool precise = false;                      // matched_tokens from the engine's KV events
  // Of matched_tokens, those in the prefix index only because one of the router's
  // requests still awaiting its first token there is prefilling them (it put them in at
  // dispatch): the hit exists only once that prefill ends, which queue_wait_s counts.
  // 0 with the precise index (KV events report blocks once computed).
  double in_progress_tokens = 0;
  double uncached_tokens = 0;  // expected prefill for this request
  // Tokens of cached prefixes (by the prefix index's belief) that admitting this
  // request's uncached tokens would push out of the endpoint's cache (LRU), 0 while the
  // index is below its capacity; <= uncached_tokens.
  double evicted_tokens = 0;
  // Prefix index size / capacity, in [0, 1], times the router's recent reuse (EWMA over
  // its last ~20 dispatches of the expected-hit fraction of the prompt): how much repeat
  // traffic what the cache holds is likely to attract. 0 when nothing is being reused.
  double cache_fill = 0;
  // The router's recent reuse alone (the EWMA above), in [0, 1]: 0 when no request has
  // lately found its prefix cached anywhere, so cached prefixes are not worth keeping.
  double recent_reuse = 0;
  // Prefix index size / capacity alone, in [0, 1]: how much the endpoint's cache holds.
  double index_fill = 0;
  double predicted_ttft_s = 0;  // the endpoint's TTFT predictor
  double queue_wait_s = 0;      // part of it waiting for work ahead
  // Part of it that is the endpoint's fixed cost per request (the predictor's learned t0:
  // HTTP, tokenization, scheduling), which occupies no engine step: predicted_ttft_s -
  // queue_wait_s - fixed_cost_s is the request's own prefill compute.
  double fixed_cost_s = 0;
  // Decoding there (routing/decode_model.h), counting the router's requests awaiting a
  // first token as decoding already (work dispatched but not yet visible is charged at
  // dispatch): sequences besides this request, the predicted ITL once it decodes too,
  // and how much it adds to every other sequence's ITL.
  double decode_seqs = 0;
  double itl_s = 0;
  double itl_delta_s = 0;
  double output_tokens = 0;  // this request's expected output tokens
};

struct StrategyOptions {
  uint64_t seed = 1;
  double stale_metrics_s = 5.0;
  // Named weights of a strategy's score terms (RouterConfig::strategy_options), so each
  // term can be ablated; a strategy reads its own names and ignores the rest. Absent: the
  // strategy's default (1 for predicted-ttft's terms, kPredictedTtftTerms).
  std::map<std::string, double, std::less<>> weights;
  double Weight(std::string_view term, double fallback = 1.0) const {
    auto it = weights.find(term);
    return it == weights.end() ? fallback : it->second;
  }
};

// predicted-ttft's score terms (predicted_ttft.cc), each multiplied by its weight in
// StrategyOptions::weights: "extra_work" (the extra prefill over the cheapest candidate,
// times kExtraWorkWeight), "evict" (cached prefixes pushed out), "fill" (future affinity
// traffic), "decode" (decoding there, for everyone there). The predicted TTFT itself has
// no weight.
inline constexpr std::string_view kPredictedTtftTerms[] = {"extra_work", "evict", "fill", "decode"};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Returns the index of the chosen candidate in `candidates` (never empty) and writes
  // each candidate's score (lower is better) into `scores` (same size).
  virtual size_t Choose(const RequestFeatures& request, std::span<const CandidateView> candidates,
                        std::span<double> scores, Seconds now) = 0;
  // Optional hooks for requests this strategy routed.
  virtual void OnDispatched(const RequestFeatures& request, const EndpointId& endpoint,
                            Seconds now) {}
  virtual void OnFinished(const std::string& request_id, const EndpointId& endpoint,
                          const Usage& usage, Outcome outcome, Seconds now) {}
  // An endpoint left the pool (Router::RemoveEndpoint): drop what is kept for it, and its
  // requests in flight (they get no OnFinished), so per-endpoint state does not grow with
  // pod churn and a replica re-added under the same name starts cold.
  virtual void OnEndpointRemoved(const EndpointId& endpoint) {}
  // An endpoint's cache is gone (Router::ResetEndpoint, or a restart the router saw in its
  // counters going backwards): forget what it was believed to cache. Its requests in
  // flight still finish or fail through OnFinished.
  virtual void OnEndpointReset(const EndpointId& endpoint) {}
};

using StrategyFactory = std::function<std::unique_ptr<Strategy>(const StrategyOptions&)>;

// Registers (or replaces) a strategy under `name`.
void RegisterStrategy(std::string name, StrategyFactory factory);
// The factory registered under `name`, or std::nullopt.
std::optional<StrategyFactory> FindStrategy(std::string_view name);
// Registered names, sorted.
std::vector<std::string> RegisteredStrategyNames();

// Next value of a splitmix64 generator (Steele, Lea, Flood, "Fast splittable pseudorandom
// number generators", OOPSLA 2014); deterministic for a given seed.
uint64_t SplitMix64(uint64_t& state);

// Helper for strategies: index of the lowest score; exact ties broken by `tie_break`
// (lower wins), remaining ties by a uniform draw from `rng`.
size_t ArgMin(std::span<const double> scores, std::span<const double> tie_break, uint64_t& rng);

}  // namespace kinference::routing
