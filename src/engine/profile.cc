#include "engine/profile.h"

namespace kinference::engine {
namespace {

// ---- Model shape: google/gemma-3-27b-it (HF config.json, Gemma 3 technical report) ----
// 62 layers, 5 local (1024-token sliding window) : 1 global pattern => ~10 global
// layers; 16 KV heads x head_dim 128; KV cache in bf16 (2 bytes).
// Full-context KV bytes per token (global layers only; the local layers' window is not
// paged here): 2 (K,V) * 10 layers * 16 heads * 128 dim * 2 B = 81,920 B/token.
constexpr double kKvBytesPerToken = 2.0 * 10 * 16 * 128 * 2;  // 81,920
// Parameters: 27e9 => 2 * 27e9 = 54e9 FLOP per token through the weights (forward pass).
// Attention FLOP per (query token, context token) pair in the global layers:
// 10 layers * 32 query heads * 128 dim * 4 (QK^T and PV, multiply-add = 2 each).
constexpr double kAttnFlopPerPair = 10.0 * 32 * 128 * 4;  // 163,840

// ---- GPU spec sheets ----
// NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, FP8 733 TFLOPS dense, BF16 362.05 dense.
constexpr double kL40sBytes = 48e9, kL40sBw = 864e9, kL40sFp8 = 733e12, kL40sBf16 = 362.05e12;
// NVIDIA H100 SXM datasheet: 80 GB HBM3, 3.35 TB/s, FP8 1,979 TFLOPS dense (3,958 with
// sparsity), BF16 989 TFLOPS dense.
constexpr double kH100Bytes = 80e9, kH100Bw = 3.35e12, kH100Fp8 = 1979e12, kH100Bf16 = 989e12;

// ---- Memory budget (vLLM defaults) ----
// gpu_memory_utilization 0.9 (vLLM default); FP8 checkpoint weights ~29 GB (27B params at
// 1 B plus bf16 embeddings / vision tower); ~2.2 GB activations, CUDA graphs, sampler.
constexpr double kGpuMemUtil = 0.9, kWeightBytes = 29e9, kActivationBytes = 2.2e9;

int KvBlocks(double gpu_bytes, int block_size) {
  // L40S: 0.9 * 48 GB - 29 GB - 2.2 GB = 12.0 GB; / 81,920 B = 146,484 tokens = 9,155
  // blocks of 16. H100: 72 - 29 - 2.2 = 40.8 GB => 498,046 tokens = 31,127 blocks.
  double kv_bytes = kGpuMemUtil * gpu_bytes - kWeightBytes - kActivationBytes;
  return static_cast<int>(kv_bytes / kKvBytesPerToken) / block_size;
}

HardwareProfile L40s27bFp8() {
  HardwareProfile p;
  p.name = "l40s-27b-fp8";
  p.model_name = "google/gemma-3-27b-it";
  // vLLM V1 defaults: block_size 16; max_num_seqs 256; max_num_batched_tokens 2048 for
  // online serving with chunked prefill (vllm/engine/arg_utils.py usage-context defaults).
  p.block_size = 16;
  p.max_num_seqs = 256;
  p.max_num_batched_tokens = 2048;
  p.max_model_len = 131072;                               // Gemma 3 context length (128K)
  p.num_gpu_blocks = KvBlocks(kL40sBytes, p.block_size);  // 9,155
  // Calibration targets (published light-load vLLM measurements, 27B FP8 on one L40S):
  //   TTFT 6.92 s for an independent ~16,256-token prompt;
  //   TTFT 0.31 s with its 16,000-token prefix cached;
  //   e2e 11.3 s for 256 output tokens with the prefix cached (=> ITL ~43 ms).
  // Scheduler/launch overhead per step (CPU side of a vLLM V1 step), fitted: 2 ms.
  p.step_overhead_s = 0.002;
  // Decode, memory-bound at batch 1: 27 GB weights / 864 GB/s = 31 ms floor; with kernel
  // and sampling inefficiency fitted to ITL ~43 ms => decode_base_s 39 ms.
  p.decode_base_s = 0.039;
  // Per decode sequence: its compute through the weights at the fitted prefill rate
  // (~0.39 ms) => 0.4 ms.
  p.decode_s_per_seq = 0.0004;
  // Per context token read per decode step: 81,920 B / 864 GB/s = 9.48e-8 s.
  p.decode_s_per_ctx_token = kKvBytesPerToken / kL40sBw;
  // Attention during prefill: 163,840 FLOP per (token, context) pair at 40% of the BF16
  // dense rate (FlashAttention efficiency, assumed): 1.13e-9 s.
  p.attn_s_per_token_ctx = kAttnFlopPerPair / (0.40 * kL40sBf16);
  // Prefill linear term and front-end delay: FITTED so that the uncached TTFT is 6.75 s
  // and the cached one 0.31 s given the terms above (two equations, two unknowns):
  //   3.93e-4 s/token (= 54e9 FLOP at ~137 TFLOPS, 19% of FP8 dense peak);
  //   1.25e-5 s per prompt token of front-end time (0.20 s for 16,256 tokens).
  p.prefill_s_per_token = 3.93e-4;
  p.frontend_s_per_prompt_token = 1.25e-5;
  return p;
}

HardwareProfile H10027bFp8() {
  // The L40S fit scaled by spec-sheet ratios: memory bandwidth 3.35e12 / 864e9 = 3.88x
  // (memory-bound decode terms), FP8 compute 1979 / 733 = 2.70x (prefill linear term,
  // per-sequence decode compute), BF16 compute 989 / 362.05 = 2.73x (attention). CPU-side
  // terms (step overhead, front end) unchanged. KV capacity from 80 GB.
  HardwareProfile p = L40s27bFp8();
  p.name = "h100-27b-fp8";
  p.num_gpu_blocks = KvBlocks(kH100Bytes, p.block_size);  // 31,127
  const double bw_ratio = kH100Bw / kL40sBw;
  const double fp8_ratio = kH100Fp8 / kL40sFp8;
  p.decode_base_s /= bw_ratio;
  p.decode_s_per_ctx_token = kKvBytesPerToken / kH100Bw;
  p.decode_s_per_seq /= fp8_ratio;
  p.prefill_s_per_token /= fp8_ratio;
  p.attn_s_per_token_ctx = kAttnFlopPerPair / (0.40 * kH100Bf16);
  return p;
}

HardwareProfile CpuQwen2Tiny() {
  // A differently SHAPED cost curve, for testing that the router learns shape and not
  // only speed (routing/ttft_predictor.h): real vLLM 0.32 on the two CPU cores of a
  // development machine serving a tiny Qwen2 (2 layers, hidden 128, 4 heads, 2 KV heads,
  // random weights; /work notes "real-vllm-cpu", measured 2026-12-01). Cold TTFT ~35 ms
  // at 2,048 prompt tokens and ~125 ms at 4,096: 3.6x the time for 2x the tokens, so
  // attention (quadratic) dominates where the GPU profiles' linear weight FLOPs do.
  HardwareProfile p;
  p.name = "cpu-qwen2-tiny";
  p.model_name = "qwen2-tiny";
  p.block_size = 128;  // vLLM's CPU default (must be a multiple of 32)
  p.max_num_seqs = 256;
  p.max_num_batched_tokens = 2048;  // long prompts are stored in 2,048-token chunks
  p.max_model_len = 32768;          // the model's max_position_embeddings
  // VLLM_CPU_KVCACHE_SPACE=1 GiB / (2 layers x 2 KV heads x 32 dims x 2 (K,V) x 2 B =
  // 512 B per token) = 2,097,152 tokens = 16,384 blocks of 128.
  p.num_gpu_blocks = static_cast<int>((1ull << 30) / 512 / 128);
  p.step_overhead_s = 0.001;
  // FITTED to the two cold TTFTs with 2,048-token chunks (two equations, two unknowns,
  // 1 ms per step and 1 us per prompt token of front end): 3.17e-6 s per token through
  // the weights and 1.31e-8 s per (query, context) pair of attention.
  p.prefill_s_per_token = 3.17e-6;
  p.attn_s_per_token_ctx = 1.31e-8;
  p.frontend_s_per_prompt_token = 1e-6;
  // ITL ~1-2 ms server side: 1.2 ms per step, a little per sequence, and the KV read at
  // ~20 GB/s of memory bandwidth (512 B per context token: 2.6e-8 s) (assumed).
  p.decode_base_s = 0.0012;
  p.decode_s_per_seq = 0.0001;
  p.decode_s_per_ctx_token = 512.0 / 20e9;
  return p;
}

}  // namespace

double StepDuration(const HardwareProfile& p,
                    const std::vector<std::pair<int, int>>& prefill_chunks,
                    const std::vector<int>& decode_contexts) {
  if (prefill_chunks.empty() && decode_contexts.empty()) return 0;
  double t = p.step_overhead_s;
  for (const auto& [tokens, ctx] : prefill_chunks) {
    double n = tokens;
    // Token j (0-based) of the chunk attends to ctx + j + 1 positions.
    double pairs = n * ctx + n * (n + 1) / 2;
    t += p.prefill_s_per_token * n + p.attn_s_per_token_ctx * pairs;
  }
  if (!decode_contexts.empty()) {
    t += p.decode_base_s + p.decode_s_per_seq * static_cast<double>(decode_contexts.size());
    double ctx = 0;
    for (int c : decode_contexts) ctx += c;
    t += p.decode_s_per_ctx_token * ctx;
  }
  return t;
}

Result<HardwareProfile> ProfileByName(std::string_view name) {
  if (name == "l40s-27b-fp8") return L40s27bFp8();
  if (name == "h100-27b-fp8") return H10027bFp8();
  if (name == "cpu-qwen2-tiny") return CpuQwen2Tiny();
  return Status(ErrorCode::kNotFound, "unknown hardware profile: " + std::string(name));
}

std::vector<std::string> ProfileNames() {
  return {"l40s-27b-fp8", "h100-27b-fp8", "cpu-qwen2-tiny"};
}

}  // namespace kinference::engine
