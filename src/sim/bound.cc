#include "sim/bound.h"

#include <xxhash.h>

#include <algorithm>
#include <limits>

namespace kinference::sim {

size_t TokenChain::Append(std::span<const TokenId> tokens) {
  size_t added = 0;
  for (TokenId t : tokens) {
    tail.push_back(t);
    if (tail.size() < kBoundBlockTokens) continue;
    // Any chained hash will do (the bound compares prompts with prompts): XXH3-64 of the
    // block's token ids seeded with the parent's hash.
    const uint64_t parent = hashes.empty() ? 0x626f756e64ULL : hashes.back();
    hashes.push_back(XXH3_64bits_withSeed(tail.data(), tail.size() * sizeof(TokenId), parent));
    tail.clear();
    ++added;
  }
  return added;
}

LowerBound::LowerBound(const std::vector<engine::HardwareProfile>& profiles,
                       double network_latency_s)
    : profiles_(profiles), latency_s_(network_latency_s) {}

double LowerBound::EngineTtft(const engine::HardwareProfile& p, size_t prompt_tokens, size_t hit) {
  const double P = static_cast<double>(prompt_tokens);
  double t = p.frontend_s_per_prompt_token * P;
  const size_t budget = static_cast<size_t>(std::max(1, p.max_num_batched_tokens));
  size_t done = std::min(hit, prompt_tokens > 0 ? prompt_tokens - 1 : 0);
  while (done < prompt_tokens) {
    const size_t n = std::min(budget, prompt_tokens - done);
    const double nn = static_cast<double>(n), c = static_cast<double>(done);
    t += p.step_overhead_s + p.prefill_s_per_token * nn +
         p.attn_s_per_token_ctx * (nn * c + nn * (nn + 1) / 2);
    done += n;
  }
  return t;
}

double LowerBound::DecodeTime(const engine::HardwareProfile& p, size_t prompt_tokens,
                              int max_tokens) {
  if (max_tokens <= 1) return 0;
  const double k = static_cast<double>(max_tokens - 1);
  const double P = static_cast<double>(prompt_tokens);
  // Output token j (1..k) is sampled by a step reading a context of P + j - 1 tokens.
  const double ctx_sum = k * P + k * (k - 1) / 2;
  return k * (p.step_overhead_s + p.decode_base_s + p.decode_s_per_seq) +
         p.decode_s_per_ctx_token * ctx_sum;
}

LowerBound::Bounds LowerBound::Of(const TokenChain& chain, size_t prompt_tokens,
                                  int max_tokens) const {
  size_t matched = 0;
  while (matched < chain.hashes.size() && seen_.contains(chain.hashes[matched])) ++matched;
  const size_t hit16 = matched * kBoundBlockTokens;
  Bounds b{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (const auto& p : profiles_) {
    const size_t block = static_cast<size_t>(std::max(1, p.block_size));
    const size_t hit = hit16 / block * block;
    const double ttft = EngineTtft(p, prompt_tokens, hit);
    b.ttft_s = std::min(b.ttft_s, ttft);
    b.e2e_s = std::min(b.e2e_s, ttft + DecodeTime(p, prompt_tokens, max_tokens));
  }
  b.ttft_s += 4 * latency_s_;
  b.e2e_s += 4 * latency_s_;
  return b;
}

void LowerBound::Record(std::span<const uint64_t> hashes) {
  for (uint64_t h : hashes) seen_.insert(h);
}

}  // namespace kinference::sim
