// DecodeModel: one endpoint's inter-token latency (the duration of a decode step) as a
// function of what decodes there, learned online from finished requests' timings.
//
//   ITL = d0 + d_seq * R + d_ctx * C / 1e6          (seconds)
//
// R sequences decoding, C their total context (tokens): vLLM's decode step reads the
// weights once (d0) and each sequence's KV cache once (d_ctx per context token), plus a
// little compute per sequence (d_seq). Prior (the shape and the speed before any
// observation), for a ~27B model on one ~1 TB/s GPU:
//   d0    = 30 ms: 27 GB of FP8 weights at ~1 TB/s (L40S 864 GB/s: 31 ms; datasheets);
//   d_seq = 0.5 ms: one token's weight FLOPs (2 x 27e9) at ~100 TFLOPS;
//   d_ctx = 0.1 s per million context tokens: ~80 KB of KV per token (Gemma 3 27B's
//           global layers, engine/profile.cc) at ~800 GB/s.
// Observation: a finished request's median gap between streamed tokens (Router::
// OnTokenTimings; else its mean ITL, (finish - first token) / (completion tokens - 1)),
// against the mean of R and C at its first token and at its finish, as the router saw
// them. The median is the plain decode step: the mean also holds the steps stretched by
// other requests' prefill chunks (in the simulator under closed-loop load, 2-3x the
// step: the fit then charged 4.8 ms per added sequence where the step adds 1.95 ms).
// The three weights are fitted by RidgeFit (forgetting 0.97, kappa 0.01: with 0.1 a
// batch-1 step came out 6% short of the truth on synthetic l40s data) towards the prior
// scaled by the least-squares speed factor of the whole model, and clamped to
// [0.05, 20] x the prior: speed and shape are learned as for TTFT
// (routing/ttft_predictor.h), and a few observations cannot make them run away.
//
// Thread-safety: not thread-safe; owned by the Router.
#pragma once

#include <array>

#include "routing/ridge_fit.h"

namespace kinference::routing {

class DecodeModel {
 public:
  static constexpr std::array<double, 3> kPrior = {0.030, 0.0005, 0.1};  // d0, d_seq, d_ctx/1e6
  static constexpr double kForgetting = 0.97;
  static constexpr double kKappa = 0.01;
  static constexpr double kPriorWeight = 1e-4;  // s^2 of ITL: one observation of 10 ms
  static constexpr double kMinFactor = 0.05, kMaxFactor = 20;

  // Predicted ITL with `seqs` sequences decoding over `ctx_tokens` tokens of context.
  double Itl(double seqs, double ctx_tokens) const;
  // How much one more sequence with `ctx_tokens` of context adds to every step.
  double Marginal(double ctx_tokens) const;
  void Observe(double seqs, double ctx_tokens, double itl_s);
  std::array<double, 3> weights() const { return w_; }
  int observations() const { return fit_.observations(); }

 private:
  static std::array<double, 3> Features(double seqs, double ctx_tokens);
  double sum_gy_ = kPriorWeight, sum_gg_ = kPriorWeight;  // speed factor, prior included
  RidgeFit<3> fit_{kForgetting, kKappa};
  std::array<double, 3> w_ = kPrior;
};

}  // namespace kinference::routing
