// TtftPredictor: one endpoint's time-to-first-token model, learned online.
//
// Model (linear in parameters, fitted by recursive least squares with forgetting):
//   TTFT = t0                                   fixed cost (HTTP, tokenization, first step)
//        + c_prefill * (W_ahead + U) / 1000     prefill work queued ahead plus own (tokens)
//        + c_attn * U * (C + U/2) / 32768 / 1000  attention over the context (tokens^2)
//        + c_run * R                            decoding sequences sharing each step
// with W_ahead the uncached prompt tokens of requests queued ahead on the endpoint, U the
// request's own uncached tokens, C its cached tokens and R running sequences. Times are
// seconds, token counts tokens.
//
// Prior (used before any observation, and as the regulariser of the fit):
//   t0 = 0.05 s: HTTP, tokenization, scheduling and one forward step are tens of ms.
//   c_prefill = 0.25 s per 1000 tokens (4000 tokens/s): a 70B model on 4 A100s at ~50%
//     MFU prefills ~4.5k tokens/s (2*70e9 FLOP/token vs 4*312 TFLOP/s, A100 datasheet);
//     an 8B model on one GPU is faster, so the prior errs slow.
//   c_attn = 0.25 s per 1000 tokens at a 32768-token context: for Llama-3-8B
//     (32 layers, d_model 4096) attention costs ~4*32*4096 FLOP per token pair vs
//     2*8e9 per token for the weights, so they are even near 30k tokens of context.
//   c_run = 0.002 s per running sequence (decode tokens take part of each step's budget).
// Prior std devs (0.05, 0.25, 0.25, 0.005) against an observation noise of 0.05 s make
// the prior worth about one observation; the forgetting factor 0.97 (memory ~30
// observations) lets the fit follow load-dependent changes. No variance is inflated
// past its prior (no wind-up when a feature stops varying), the per-token
// coefficients are kept non-negative (more work never predicts a shorter TTFT), and
// predictions are clamped to >= 0.
//
// Thread-safety: not thread-safe; owned by the Router.
#pragma once

#include <array>

namespace kinference::routing {

struct TtftFeatures {
  double work_ahead_tokens = 0;  // uncached tokens queued ahead of the request
  double uncached_tokens = 0;    // the request's own prefill (tokens)
  double cached_tokens = 0;      // its expected prefix-cache hit (tokens)
  double running_seqs = 0;       // sequences decoding on the endpoint
};

struct TtftPrediction {
  double ttft_s = 0;        // predicted TTFT, >= 0
  double queue_wait_s = 0;  // the part due to work queued ahead, >= 0
};

class TtftPredictor {
 public:
  static constexpr int kDim = 4;
  using Vec = std::array<double, kDim>;

  TtftPredictor();
  TtftPrediction Predict(const TtftFeatures& f) const;
  // One observation: a request dispatched with features `f` had TTFT `observed_s`.
  void Observe(const TtftFeatures& f, double observed_s);

  const Vec& coefficients() const { return theta_; }
  int observations() const { return n_; }

  static Vec Features(const TtftFeatures& f);
  static Vec PriorCoefficients();

 private:
  Vec theta_;
  std::array<Vec, kDim> p_;  // covariance (in units of the noise variance)
  Vec p0_{};                 // prior variances (diagonal)
  int n_ = 0;
};

}  // namespace kinference::routing
