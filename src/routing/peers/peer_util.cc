#include "routing/peers/peer_util.h"

#include <cmath>
#include <vector>

#include "routing/ttft_predictor.h"

namespace kinference::routing::peers {

double EstimateBlockChars(const RequestFeatures& r) {
  const double n = static_cast<double>(r.block_hashes.size());
  const double p = static_cast<double>(r.prompt_chars);
  if (n == 0 || p < n) return 128;
  const double lo = p / (n + 1), hi = p / n;
  for (double b = 1; b <= hi; b *= 2)
    if (b > lo) return b;
  return std::floor(hi);
}

double PriorPrefillTokensPerS() { return 1000.0 / TtftPredictor::PriorCoefficients()[1]; }

double ScrapedWaiting(const CandidateView& c) {
  return c.metrics ? c.metrics->num_requests_waiting.value_or(0) : 0;
}

bool TtlBlockSet::Live(uint64_t h, Seconds now) const {
  auto it = stamp_.find(h);
  return it != stamp_.end() && now - it->second < ttl_s_;
}

size_t TtlBlockSet::Match(std::span<const uint64_t> chain, Seconds now) const {
  size_t lo = 0, hi = chain.size();  // answer in [lo, hi]
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (Live(chain[mid - 1], now))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

void TtlBlockSet::Insert(std::span<const uint64_t> chain, Seconds now) {
  for (uint64_t h : chain) stamp_[h] = now;
  if (stamp_.size() < sweep_at_) return;
  std::erase_if(stamp_, [&](const auto& kv) { return now - kv.second >= ttl_s_; });
  sweep_at_ = std::max<size_t>(4096, 2 * stamp_.size());
}

}  // namespace kinference::routing::peers
