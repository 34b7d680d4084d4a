// Helpers shared by the peer strategies (peers.h): recovering the block size of a
// request's hashes, the prefill throughput prior, and a time-to-live block set.
//
// Thread-safety: pure functions; TtlBlockSet is not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "common/clock.h"
#include "routing/router.h"
#include "routing/strategy.h"

namespace kinference::routing::peers {

// Characters per block of `r.block_hashes` (RouterConfig::block_chars), which a strategy
// is not told. With n hashes of a P-character prompt, block_chars lies in (P/(n+1), P/n]
// (the last partial block is dropped); the power of two in that interval is returned
// when there is one (the router's sizes are powers of two: 128 by default), else
// floor(P/n). Returns 128 (RouterConfig's default) when the request has no hashes.
double EstimateBlockChars(const RequestFeatures& r);

// Prefill throughput (tokens/s) implied by TtftPredictor's prior c_prefill (s per 1000
// tokens): 1000 / 0.25 = 4000 tokens/s, reasoned in ttft_predictor.h.
double PriorPrefillTokensPerS();

// vllm:num_requests_waiting from the last scrape; 0 when never scraped or missing.
double ScrapedWaiting(const CandidateView& c);

// Blocks the router predicts an endpoint holds, each forgotten `ttl_s` seconds after it
// was last sent there (Dynamo's approximate mode). Insert stamps a whole chain with the
// same time, so along a chain stamps never increase; Match is therefore a binary search,
// like PrefixIndex::Match.
class TtlBlockSet {
 public:
  explicit TtlBlockSet(double ttl_s) : ttl_s_(ttl_s) {}
  // Number of leading hashes of `chain` present and unexpired at `now`.
  size_t Match(std::span<const uint64_t> chain, Seconds now) const;
  void Insert(std::span<const uint64_t> chain, Seconds now);
  size_t size() const { return stamp_.size(); }

 private:
  bool Live(uint64_t h, Seconds now) const;
  double ttl_s_;
  std::unordered_map<uint64_t, Seconds> stamp_;
  size_t sweep_at_ = 4096;  // sweep expired entries when the map grows past this
};

}  // namespace kinference::routing::peers
