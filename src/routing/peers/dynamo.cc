// `dynamo`: NVIDIA Dynamo's KV router cost in its approximate mode (see peers.h for
// sources). Per candidate, in the router's blocks:
//   prefill_blocks = request blocks - overlap blocks, overlap = leading request blocks
//                    the strategy sent to that endpoint within the last block_ttl_s;
//   decode_blocks  = "potential active blocks": distinct blocks held by the sequences
//                    this strategy has in flight there, plus the request's blocks not
//                    among them;
//   cost           = overlap_score_weight * prefill_blocks + decode_blocks,
// lowest wins (router temperature 0: deterministic, random among exact ties).
// Every sequence also counts one block for its partial tail (the hashes drop the last
// partial block, and a decoding sequence always writes into one), so short prompts still
// spread by load. Active blocks do not grow with generated tokens here: the router sees
// tokens only at the end (usage), when the sequence leaves anyway.
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "routing/peers/peer_util.h"
#include "routing/peers/peers.h"

namespace kinference::routing::peers {
namespace {

class DynamoStrategy final : public Strategy {
 public:
  DynamoStrategy(const StrategyOptions& o, const DynamoOptions& d) : d_(d), rng_(o.seed) {}

  size_t Choose(const RequestFeatures& r, std::span<const CandidateView> c,
                std::span<double> scores, Seconds now) override {
    const double request_blocks = static_cast<double>(r.block_hashes.size()) + 1;  // + tail
    for (size_t i = 0; i < c.size(); ++i) {
      double overlap = 0, active = 0, new_active = request_blocks;
      auto it = workers_.find(c[i].info->id);
      if (c[i].precise) {
        // With KV events (Dynamo's default mode), the overlap is what the engine holds:
        // the router's precise index, in this request's blocks.
        const double prompt = c[i].matched_tokens + c[i].uncached_tokens;
        if (prompt > 0) overlap = request_blocks * c[i].matched_tokens / prompt;
      }
      if (it != workers_.end()) {
        const Worker& w = it->second;
        if (!c[i].precise) overlap = static_cast<double>(w.cached.Match(r.block_hashes, now));
        active = static_cast<double>(w.active_refs.size()) + w.active_seqs;
        for (uint64_t h : r.block_hashes)
          if (w.active_refs.count(h)) new_active -= 1;
      }
      double prefill_blocks = request_blocks - overlap;
      double decode_blocks = active + new_active;
      scores[i] = d_.overlap_score_weight * prefill_blocks + decode_blocks;
    }
    return ArgMin(scores, {}, rng_);
  }

  void OnDispatched(const RequestFeatures& r, const EndpointId& endpoint, Seconds now) override {
    auto old = requests_.find(r.request_id);
    if (old != requests_.end()) Release(old);  // a re-dispatch replaces the earlier record
    Worker& w = workers_.try_emplace(endpoint, d_.block_ttl_s).first->second;
    w.cached.Insert(r.block_hashes, now);
    for (uint64_t h : r.block_hashes) ++w.active_refs[h];
    ++w.active_seqs;
    requests_[r.request_id] = Active{endpoint, r.block_hashes};
  }

  void OnFinished(const std::string& request_id, const EndpointId&, const Usage&, Outcome,
                  Seconds) override {
    auto it = requests_.find(request_id);
    if (it != requests_.end()) Release(it);
  }

  void OnEndpointRemoved(const EndpointId& endpoint) override {
    std::erase_if(requests_, [&](const auto& r) { return r.second.endpoint == endpoint; });
    workers_.erase(endpoint);
  }
  // The cached blocks go; the active ones stay until their requests finish or fail.
  void OnEndpointReset(const EndpointId& endpoint) override {
    auto it = workers_.find(endpoint);
    if (it != workers_.end()) it->second.cached = TtlBlockSet(d_.block_ttl_s);
  }

 private:
  struct Worker {
    explicit Worker(double ttl_s) : cached(ttl_s) {}
    TtlBlockSet cached;
    std::unordered_map<uint64_t, int> active_refs;  // block -> active sequences holding it
    int active_seqs = 0;                            // one tail block each
  };
  struct Active {
    EndpointId endpoint;
    std::vector<uint64_t> blocks;
  };

  void Release(std::unordered_map<std::string, Active>::iterator it) {
    auto w = workers_.find(it->second.endpoint);
    if (w != workers_.end()) {
      for (uint64_t h : it->second.blocks) {
        auto ref = w->second.active_refs.find(h);
        if (ref != w->second.active_refs.end() && --ref->second <= 0)
          w->second.active_refs.erase(ref);
      }
      --w->second.active_seqs;
    }
    requests_.erase(it);
  }

  DynamoOptions d_;
  uint64_t rng_;
  std::map<EndpointId, Worker> workers_;
  std::unordered_map<std::string, Active> requests_;
};

}  // namespace

std::unique_ptr<Strategy> MakeDynamo(const StrategyOptions& o, const DynamoOptions& d) {
  return std::make_unique<DynamoStrategy>(o, d);
}

}  // namespace kinference::routing::peers
