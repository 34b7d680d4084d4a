// `gie`: the Gateway API Inference Extension / llm-d default scheduler (see peers.h for
// sources). Per candidate, each scorer gives a score in [0, 1]; the weighted sum is
// maximised (max-score picker, random among ties):
//   prefix   = matched blocks / request blocks, both capped at the first 256 blocks of
//              64 characters (16384 characters, ~4k tokens); matched against the
//              strategy's own per-endpoint LRU index of what it dispatched there
//              (LRUCapacityPerServer 31250 blocks of 64 characters, ~2M characters);
//   queue    = (max_waiting - waiting) / (max_waiting - min_waiting) across candidates,
//              from scraped vllm:num_requests_waiting; 1 for all when they are equal;
//   kv-cache = 1 - vllm:kv_cache_usage_perc.
// Never-scraped endpoints count as idle (waiting 0, usage 0), as GIE's defaults.
// Our block hashes are the router's (block_chars characters, 128 by default) rather than
// GIE's 64-character ones; the 256 x 64-character cap and the LRU capacity are converted
// to the router's blocks, so the cap falls at the same character offset (rounded down to
// a whole block). Reported score: minus the weighted sum (lower is better).
#include <algorithm>
#include <map>
#include <vector>

#include "routing/peers/peer_util.h"
#include "routing/peers/peers.h"
#include "routing/prefix_index.h"

namespace kinference::routing::peers {
namespace {

class GieStrategy final : public Strategy {
 public:
  GieStrategy(const StrategyOptions& o, const GieOptions& g) : g_(g), rng_(o.seed) {}

  size_t Choose(const RequestFeatures& r, std::span<const CandidateView> c,
                std::span<double> scores, Seconds) override {
    const double block_chars = EstimateBlockChars(r);
    std::span<const uint64_t> chain = Capped(r, block_chars);
    double qmin = 0, qmax = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      double q = ScrapedWaiting(c[i]);
      qmin = i == 0 ? q : std::min(qmin, q);
      qmax = i == 0 ? q : std::max(qmax, q);
    }
    for (size_t i = 0; i < c.size(); ++i) {
      double prefix = 0;
      if (!chain.empty()) {
        auto it = index_.find(c[i].info->id);
        size_t matched = it == index_.end() ? 0 : it->second.Match(chain);
        prefix = static_cast<double>(matched) / static_cast<double>(chain.size());
      }
      double queue = qmax == qmin ? 1.0 : (qmax - ScrapedWaiting(c[i])) / (qmax - qmin);
      double usage = c[i].metrics ? c[i].metrics->kv_cache_usage_perc.value_or(0) : 0;
      double kv = 1.0 - std::clamp(usage, 0.0, 1.0);
      scores[i] = -(g_.prefix_weight * prefix + g_.queue_weight * queue + g_.kv_cache_weight * kv);
    }
    return ArgMin(scores, {}, rng_);
  }

  void OnEndpointRemoved(const EndpointId& endpoint) override { index_.erase(endpoint); }
  void OnEndpointReset(const EndpointId& endpoint) override { index_.erase(endpoint); }

  void OnDispatched(const RequestFeatures& r, const EndpointId& endpoint, Seconds) override {
    const double block_chars = EstimateBlockChars(r);
    std::span<const uint64_t> chain = Capped(r, block_chars);
    if (chain.empty()) return;
    auto it = index_.find(endpoint);
    if (it == index_.end()) {
      double chars = static_cast<double>(g_.lru_capacity_blocks * g_.gie_block_chars);
      it = index_.emplace(endpoint, PrefixIndex(std::max<size_t>(1, chars / block_chars))).first;
    }
    it->second.Insert(chain);
  }

 private:
  // The request's hashes within the first max_prefix_blocks * gie_block_chars characters.
  std::span<const uint64_t> Capped(const RequestFeatures& r, double block_chars) const {
    double cap_chars = static_cast<double>(g_.max_prefix_blocks * g_.gie_block_chars);
    size_t cap = static_cast<size_t>(cap_chars / block_chars);
    return std::span<const uint64_t>(r.block_hashes).first(std::min(cap, r.block_hashes.size()));
  }

  GieOptions g_;
  uint64_t rng_;
  std::map<EndpointId, PrefixIndex> index_;
};

}  // namespace

std::unique_ptr<Strategy> MakeGie(const StrategyOptions& o, const GieOptions& g) {
  return std::make_unique<GieStrategy>(o, g);
}

}  // namespace kinference::routing::peers
