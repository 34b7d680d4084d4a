// Oracle: the simulator-only routing strategy that reads engine internals, as the bound
// no deployable router can beat (a real gateway sees none of these inputs).
//
// For each candidate engine it takes, at the moment of decision, the exact prefix-cache
// hit of this prompt (Engine::PrefixCacheHitTokens), the exact prefill work queued ahead
// (Engine::QueuedPrefillTokens) and the running sequences (Engine::NumRunning), and turns
// them into a TTFT with the engine's own cost model (engine/profile.h):
//   front end:  frontend_s_per_prompt_token * P
//   prefill:    (W + U) tokens at prefill_s_per_token, in ceil((W + U) / (B - D)) steps,
//               each step also paying step_overhead_s and, with D decoding sequences,
//               decode_base_s + decode_s_per_seq * D
//   attention:  attn_s_per_token_ctx * U * (H + U / 2) for its own chunked prefill
//   KV wait:    when the KV cache cannot hold the queued and own new tokens
//               (X = W + U + M - F > 0 tokens short, F = free KV tokens from
//               vllm:kv_cache_usage_perc, M = its max_tokens), running requests must
//               finish first; they release their Z used tokens over about one full decode
//               (M steps of the decode step time), so the wait is X / Z * M * step time
// with P prompt tokens, H cached, U = P - H uncached, W queued ahead, D = running
// sequences (capped at B - 1), B = max_num_batched_tokens. It ignores decode context
// reads and preemption (second-order); ties go to the first candidate.
//
// Thread-safety: pure functions.
#pragma once

#include "engine/profile.h"

namespace kinference::sim {

struct OracleInputs {
  int prompt_tokens = 0;
  int hit_tokens = 0;             // exact prefix-cache hit on the engine now
  int queued_prefill_tokens = 0;  // exact uncached prefill queued ahead
  int running = 0;                // sequences in the running queue
  int max_tokens = 0;             // the request's output cap (tokens)
  double free_kv_tokens = 1e18;   // KV tokens free or evictable
  double used_kv_tokens = 0;      // KV tokens held by running requests
};

// Estimated engine-side TTFT in seconds (from arrival at the engine).
double OracleTtft(const engine::HardwareProfile& p, const OracleInputs& in);

}  // namespace kinference::sim
