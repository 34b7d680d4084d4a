// `sglang`: the SGLang router's cache_aware policy (see peers.h for sources).
//   load      = requests in flight on the endpoint (the router's own bookkeeping, as the
//               SGLang router counts its running requests per worker);
//   imbalance = max load - min load > balance_abs_threshold (64) AND
//               max load > balance_rel_threshold (1.5) * min load;
//   imbalanced: the least-loaded endpoint (shortest queue);
//   balanced  : the endpoint with the highest prefix match rate if that rate exceeds
//               cache_threshold (0.3), else the endpoint whose approximate tree holds
//               the least.
// Approximate tree: per endpoint, the router's chained block hashes of every prompt this
// strategy dispatched there (whatever the branch, as SGLang inserts into its tree after
// every choice), bounded by max_tree_chars with LRU eviction (SGLang evicts periodically
// down to max_tree_size; ours evicts at once). SGLang's tree is a character-level radix
// tree; ours matches whole blocks, so match rate = matched blocks / request blocks and
// tree size = blocks held. Ties: lower load, then random.
// Reported score: the quantity the taken branch minimises (load, -match rate, or tree
// size).
#include <algorithm>
#include <map>
#include <vector>

#include "routing/peers/peer_util.h"
#include "routing/peers/peers.h"
#include "routing/prefix_index.h"

namespace kinference::routing::peers {
namespace {

class SglangStrategy final : public Strategy {
 public:
  SglangStrategy(const StrategyOptions& o, const SglangOptions& s) : s_(s), rng_(o.seed) {}

  size_t Choose(const RequestFeatures& r, std::span<const CandidateView> c,
                std::span<double> scores, Seconds) override {
    std::vector<double> load(c.size());
    for (size_t i = 0; i < c.size(); ++i) load[i] = c[i].in_flight;
    auto [mn, mx] = std::minmax_element(load.begin(), load.end());
    bool imbalanced = *mx - *mn > s_.balance_abs_threshold && *mx > s_.balance_rel_threshold * *mn;
    if (imbalanced) {
      std::copy(load.begin(), load.end(), scores.begin());
      return ArgMin(scores, {}, rng_);
    }
    const double n = static_cast<double>(r.block_hashes.size());
    double best_rate = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      const PrefixIndex* tree = Tree(c[i].info->id);
      double rate = n == 0 || tree == nullptr ? 0 : tree->Match(r.block_hashes) / n;
      scores[i] = -rate;
      best_rate = std::max(best_rate, rate);
    }
    if (best_rate > s_.cache_threshold) return ArgMin(scores, load, rng_);
    for (size_t i = 0; i < c.size(); ++i) {
      const PrefixIndex* tree = Tree(c[i].info->id);
      scores[i] = tree == nullptr ? 0 : static_cast<double>(tree->size());
    }
    return ArgMin(scores, load, rng_);
  }

  void OnEndpointRemoved(const EndpointId& endpoint) override { trees_.erase(endpoint); }
  void OnEndpointReset(const EndpointId& endpoint) override { trees_.erase(endpoint); }

  void OnDispatched(const RequestFeatures& r, const EndpointId& endpoint, Seconds) override {
    if (r.block_hashes.empty()) return;
    auto it = trees_.find(endpoint);
    if (it == trees_.end()) {
      double blocks = s_.max_tree_chars / EstimateBlockChars(r);
      it = trees_.emplace(endpoint, PrefixIndex(std::max<size_t>(1, blocks))).first;
    }
    it->second.Insert(r.block_hashes);
  }

 private:
  const PrefixIndex* Tree(const EndpointId& id) const {
    auto it = trees_.find(id);
    return it == trees_.end() ? nullptr : &it->second;
  }

  SglangOptions s_;
  uint64_t rng_;
  std::map<EndpointId, PrefixIndex> trees_;
};

}  // namespace

std::unique_ptr<Strategy> MakeSglang(const StrategyOptions& o, const SglangOptions& s) {
  return std::make_unique<SglangStrategy>(o, s);
}

}  // namespace kinference::routing::peers
