// EndpointState: everything the router believes about one endpoint — its scraped metrics
// and their age, the requests it dispatched there that have not produced a first token,
// its prefix index and its TTFT predictor — and the estimate of the prefill work queued
// ahead of a new request, built from those.
//
// Queue estimate (tokens of uncached prefill ahead of a request dispatched now):
//   own   : the router's own requests awaiting a first token, drained as a FIFO, each
//           for its own prefill time as the predictor estimates it (prefill and
//           attention, at the learned speed; before this, U / rate, which let a long
//           prompt's attention go unseen: on the Mooncake trace, 12 x h100-27b-fp8,
//           uncached tokens per replica spread 471k-717k and predicted-ttft TTFT p90
//           was 5.95 s; now 4.51 s, sglang 4.74 s), from its dispatch time or the end
//           of the one ahead, and the head no
//           earlier than the last first token seen here (FCFS: a request does not start
//           its prefill before the one ahead of it got its first token); expressed in
//           tokens at the predictor's learned prefill rate (1000 / c_prefill tokens/s);
//   other : scraped vllm:num_requests_waiting beyond the router's own awaiting requests
//           at scrape time (traffic from elsewhere), times the uncached tokens of an
//           average request (from the scrape's counter deltas; prior 512 tokens), less
//           what the endpoint drained since the scrape; halved when older than
//           RouterConfig::stale_metrics_s.
// Running sequences: the router's own requests past their first token plus scraped
// vllm:num_requests_running beyond the router's own in-flight requests at scrape time.
//
// Thread-safety: not thread-safe; owned by the Router.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "routing/decode_model.h"
#include "routing/metrics_snapshot.h"
#include "routing/precise_index.h"
#include "routing/prefix_index.h"
#include "routing/router.h"
#include "routing/ttft_predictor.h"

namespace kinference::routing {

struct QueueEstimate {
  double own_tokens = 0;    // uncached tokens of own requests still to prefill
  double other_tokens = 0;  // same for traffic the router did not dispatch
  double running_seqs = 0;  // sequences decoding
  double total() const { return own_tokens + other_tokens; }
};

// What decodes on an endpoint (for DecodeModel): sequences and their total context.
struct DecodeLoad {
  double seqs = 0;
  double ctx_tokens = 0;
};

class EndpointState {
 public:
  static constexpr double kDefaultCapacityTokens = 1e6;   // until cache_config_info is seen
  static constexpr double kPriorOtherPromptTokens = 512;  // uncached tokens per other request

  EndpointState(EndpointInfo info, size_t default_capacity_blocks)
      : info(std::move(info)), index(default_capacity_blocks) {}

  // Records a scrape; returns true when the endpoint's counters went backwards (a restart).
  bool ObserveMetrics(const MetricsSnapshot& snap, Seconds scraped_at);
  double MetricsAge(Seconds now) const { return metrics ? std::max(0.0, now - scraped_at) : -1; }

  // `own`: the request's own prefill features (no queue, no running sequences): it holds
  // the queue for predictor.Work(own) seconds, so a long prompt, slower per token for its
  // attention, holds it as long as the predictor expects, at the speed and shape learned
  // so far; nullopt: uncached_tokens at PrefillRate().
  // `block_hashes`: its prompt's chained block hashes (RequestFeatures::block_hashes),
  // of which the first `cached_blocks` were in the prefix index when it was dispatched:
  // the rest are in the index only because its prefill is computing them (see
  // InProgressBlocks).
  void AddPending(uint64_t seq, Seconds dispatched_at, double uncached_tokens,
                  std::optional<TtftFeatures> own = std::nullopt, double context_tokens = 0,
                  std::vector<uint64_t> block_hashes = {}, size_t cached_blocks = 0);
  // Drops a request from the awaiting-first-token queue; `first_token_at` (when it got
  // its first token) tells when the requests behind it could start their prefill.
  void RemovePending(uint64_t seq, std::optional<Seconds> first_token_at = std::nullopt);
  int awaiting_first_token() const { return static_cast<int>(pending_.size()); }
  // Of the first `matched_blocks` blocks of `block_hashes` (a prompt's chained hashes,
  // as the prefix index matched them here), how many are there only because a request
  // still awaiting its first token here is prefilling them: blocks that were not in the
  // index at its dispatch and that it shares with this prompt. The largest such count
  // over the pending requests; 0 when the whole match was cached before any of them.
  // A request routed here cannot hit them before that prefill ends. O(pending x log
  // blocks).
  size_t InProgressBlocks(std::span<const uint64_t> block_hashes, size_t matched_blocks) const;

  QueueEstimate EstimateQueue(Seconds now, double stale_metrics_s) const;
  // Sequences decoding now (q.running_seqs) and their context: the router's own running
  // requests' (own_running_ctx) plus, for the others, the mean of its own (or
  // kPriorContextTokens when it has none running).
  DecodeLoad Decoding(const QueueEstimate& q) const;
  // The same once the requests awaiting a first token here decode too (a request routed
  // now will decode next to them): dispatched-but-unseen work counts at dispatch.
  DecodeLoad DecodingWithPending(const QueueEstimate& q) const;
  // Prefill throughput implied by the predictor (tokens/s).
  double PrefillRate() const;

  EndpointInfo info;
  bool healthy = true;
  // Cooldown (Router::CoolDown): not picked while now < cooling_until; `cooling` is a
  // cooldown Router::CooldownsEnded has not yet reported over.
  Seconds cooling_until = -1e300;
  bool cooling = false;
  bool CoolingAt(Seconds now) const { return now < cooling_until; }
  std::optional<MetricsSnapshot> metrics;
  Seconds scraped_at = 0;
  int in_flight = 0;  // dispatched, not finished
  PrefixIndex index;
  PreciseIndex precise;  // from KV events; used while kv_live
  bool kv_live = false;
  uint64_t kv_batches = 0, kv_clears = 0;
  TtftPredictor predictor;
  DecodeModel decode;
  double own_running_ctx = 0;  // context tokens of own requests past their first token
  static constexpr double kPriorContextTokens = 2000;

 private:
  struct Pending {
    Seconds dispatched_at;
    double uncached_tokens;
    std::optional<TtftFeatures> own;     // its own prefill's features; nullopt: unknown
    double context_tokens;               // its context while it decodes (estimate)
    std::vector<uint64_t> block_hashes;  // its prompt's chained block hashes
    size_t cached_blocks = 0;            // of those, in the prefix index at its dispatch
  };
  double pending_ctx_ = 0;               // sum of pending_'s context_tokens
  std::map<uint64_t, Pending> pending_;  // by dispatch order
  Seconds head_free_at_ = -1e300;        // the queue's head started prefill no earlier than this
  int pending_at_scrape_ = 0;
  int in_flight_at_scrape_ = 0;
  double other_prompt_tokens_ = kPriorOtherPromptTokens;
};

}  // namespace kinference::routing
