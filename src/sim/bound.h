// LowerBound: per-request bounds on client-side TTFT and e2e latency that no routing can
// beat, for judging how far a strategy is from ideal (the `oracle` strategy is greedy,
// and predicted-ttft beats it, so it is no bound).
//
// A request's bound is its latency alone on the fastest replica of the run, with every
// prefix that any request sent earlier (to any replica) computed cached there, in an
// unbounded KV cache: no queue ahead, no other sequence decoding, no eviction. Engine
// side, with the engine's own cost model (engine/profile.h) and chunking:
//   TTFT = frontend_s_per_prompt_token * P
//          + sum over its prefill chunks (max_num_batched_tokens each) of
//            step_overhead_s + prefill_s_per_token * n + attn_s_per_token_ctx * pairs
//   e2e  = TTFT + sum over its other max_tokens - 1 tokens of a batch-1 decode step
//          (step_overhead_s + decode_base_s + decode_s_per_seq + decode_s_per_ctx_token * ctx)
// with H = the longest prefix, in whole blocks of the replica's block_size and capped at
// P - 1 (as the engine), shared with the blocks of any earlier request's prompt or
// output, and U = P - H. Client side adds the four network hops (client -> gateway ->
// engine, and back). "Earlier" = reached an engine before this request did: a superset of
// the blocks it could have found cached (blocks are cached only once computed), so the
// bound stays a bound. Gateway queueing, scrapes and routing are free.
//
// Units: seconds, tokens. Thread-safety: not thread-safe; one per simulation.
#pragma once

#include <boost/unordered/unordered_flat_set.hpp>
#include <cstdint>
#include <span>
#include <vector>

#include "common/tokenizer.h"
#include "engine/profile.h"

namespace kinference::sim {

// Chained hashes (XXH3-64) of a token sequence in 16-token blocks, with the tokens after
// the last full block, so that output tokens can extend it.
struct TokenChain {
  std::vector<uint64_t> hashes;
  std::vector<TokenId> tail;  // < kBoundBlockTokens tokens
  // Appends tokens; returns how many new full-block hashes were added (at the end).
  size_t Append(std::span<const TokenId> tokens);
};
inline constexpr size_t kBoundBlockTokens = 16;  // divides every profile's block_size

class LowerBound {
 public:
  LowerBound(const std::vector<engine::HardwareProfile>& profiles, double network_latency_s);

  struct Bounds {
    double ttft_s = 0;
    double e2e_s = 0;
  };
  // The bound of a request whose prompt has `chain` (prompt_tokens tokens) against what
  // has been recorded so far.
  Bounds Of(const TokenChain& chain, size_t prompt_tokens, int max_tokens) const;
  // Records blocks as computed somewhere (a prompt reaching an engine; outputs).
  void Record(std::span<const uint64_t> hashes);

  // Engine-side bounds for one profile, `hit` prompt tokens cached (exposed for tests).
  static double EngineTtft(const engine::HardwareProfile& p, size_t prompt_tokens, size_t hit);
  static double DecodeTime(const engine::HardwareProfile& p, size_t prompt_tokens, int max_tokens);

 private:
  std::vector<engine::HardwareProfile> profiles_;
  double latency_s_;
  boost::unordered_flat_set<uint64_t> seen_;
};

}  // namespace kinference::sim
