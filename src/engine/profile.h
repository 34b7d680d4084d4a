// HardwareProfile: the constants of one (model, GPU, vLLM config) combination and the
// cost model that turns a scheduled step into a duration.
//
// Every constant carries its source in profile.cc (a vLLM default, a spec sheet, or a
// fit to a published measurement). Units: seconds, tokens, blocks.
//
// Thread-safety: immutable values; share freely.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kinference::engine {

struct HardwareProfile {
  std::string name;        // e.g. "l40s-27b-fp8"
  std::string model_name;  // served model name, e.g. "google/gemma-3-27b-it"
  // vLLM scheduler configuration.
  int block_size = 16;                // tokens per KV block (vLLM default)
  int num_gpu_blocks = 0;             // KV capacity in blocks (derived, see profile.cc)
  int max_num_batched_tokens = 2048;  // per-step token budget
  int max_num_seqs = 256;             // running-sequence cap
  int max_model_len = 131072;         // prompt + output cap (tokens)
  // Cost model: duration of a step =
  //   step_overhead_s
  //   + prefill_s_per_token * (prefill tokens in step)
  //   + attn_s_per_token_ctx * sum over prefill tokens of their context length
  //       (token j of a chunk that starts after c computed tokens attends to c + j + 1)
  //   + (decode_base_s if any decode sequence in step)
  //   + decode_s_per_seq * (decode sequences)
  //   + decode_s_per_ctx_token * (sum of decode sequences' context lengths)
  double step_overhead_s = 0;
  double prefill_s_per_token = 0;
  double attn_s_per_token_ctx = 0;
  double decode_base_s = 0;
  double decode_s_per_seq = 0;
  double decode_s_per_ctx_token = 0;
  // Front-end time per prompt token (HTTP, chat template, tokenization in vLLM's API
  // server), not a GPU step. The Engine applies it itself: a request becomes schedulable
  // only at arrival + frontend_s_per_prompt_token * prompt tokens, so it is part of TTFT
  // and e2e latency (measured from arrival, as vLLM does) but not of queue time.
  double frontend_s_per_prompt_token = 0;
};

// Step duration for a step with the given prefill chunks and decode sequences.
// `prefill_chunks`: (chunk tokens, context length before the chunk) per request.
// `decode_contexts`: context length of each decoding sequence.
double StepDuration(const HardwareProfile& p,
                    const std::vector<std::pair<int, int>>& prefill_chunks,
                    const std::vector<int>& decode_contexts);

// Built-in profiles by name ("l40s-27b-fp8", "h100-27b-fp8"); kNotFound otherwise.
Result<HardwareProfile> ProfileByName(std::string_view name);
std::vector<std::string> ProfileNames();

}  // namespace kinference::engine
