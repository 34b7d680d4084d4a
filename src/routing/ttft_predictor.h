// TtftPredictor: one endpoint's time-to-first-token model, learned online.
//
// Model: a fixed cost plus a prior-shaped cost scaled by one learned factor s (seconds):
//   TTFT = t0 + s * [ c_prefill * (W_ahead + U) / 1000          prefill queued ahead + own
//                   + c_attn * U * (C + U/2) / 32768 / 1000     attention over the context
//                   + c_run * R ]                               decoding sequences
// with W_ahead the uncached prompt tokens of requests queued ahead on the endpoint, U the
// request's own uncached tokens, C its cached tokens and R running sequences. Times are
// seconds, token counts tokens.
//
// Why one factor, not a free linear fit: an earlier version fitted all four coefficients
// by recursive least squares. Its features are nearly collinear in practice (one workload
// has U ~ constant, so t0, c_prefill and c_attn trade off; R rises with queueing, so c_run
// absorbed queue errors), and clamping coefficients after RLS updates made it diverge
// (simulated 3 x l40s-27b-fp8, `independent` at 0.15 req/s: t0 -3.7 s, c_run 0.55 s per
// sequence, predictions of 200 s for 7 s TTFTs). The shape of the cost is known from how
// vLLM schedules (chunked prefill, FCFS); what varies between deployments is mostly the
// speed, so that is what is learned: least squares of (TTFT - t0) on g, the prior cost
// without t0 (with the learned shape below), with forgetting factor 0.97 (memory ~30
// observations), plus a never-forgotten pseudo-observation of weight kSpeedPriorWeight at
// s = 1 (the prior); s is clamped to [0.001, 20] (a tiny model on a CPU prefills ~80x faster per
// token than the prior: s ~ 0.013; the bound was 0.05 before the CPU profile showed
// that). t0 is learned with the shape (below) from unqueued observations; learning it
// by a free joint fit with s on every observation made routing worse (measured:
// independent 0.15 req/s TTFT p90 9.2 s against 7.8 s; multiturn 0.5 req/s 2.9 / 32 s
// against 1.9 / 27 s).
//
// Prior (the shape, and the speed before any observation):
//   t0 = 0.05 s: HTTP, tokenization, scheduling and one forward step are tens of ms on a
//     GPU (learned per endpoint: below).
//   c_prefill = 0.25 s per 1000 tokens (4000 tokens/s): a 70B model on 4 A100s at ~50%
//     MFU prefills ~4.5k tokens/s (2*70e9 FLOP/token vs 4*312 TFLOP/s, A100 datasheet);
//     an 8B model on one GPU is faster, so the prior errs slow.
//   c_attn = 0.25 s per 1000 tokens at a 32768-token context: for Llama-3-8B
//     (32 layers, d_model 4096) attention costs ~4*32*4096 FLOP per token pair vs
//     2*8e9 per token for the weights, so they are even near 30k tokens of context.
//   c_run = 0.002 s per running sequence (decode tokens take part of each step's budget).
//     Under chunked prefill each prefill step also pays a decode step (~30-40 ms on the
//     simulated l40s-27b-fp8: 6.76 s for a 16k prompt idle, 7.10 s next to one decoding
//     sequence); a per-step decode term (0.03 s per 2048-token step) was tried and made
//     routing worse (independent 0.15 req/s p90 8.3 s against 7.8 s), so it is not used.
// Predictions are >= t0 and monotone in every feature.
//
// Shape and fixed cost (learn_shape, the default): the prior's split of the cost between
// a fixed part, prefill and attention came from the same assumptions as the simulator's
// engine model, and real engines differ in shape, not only in speed: vLLM on a CPU spends
// ~3.6x its linear prefill cost on attention at 2k tokens (cold 2k-token TTFT 30-40 ms,
// 4k 125 ms; docs/engine-model.md, cpu-qwen2-tiny), the prior 0.03x; and it pays ~1 s per
// request even when the whole prompt is cached (vLLM 0.32 CPU, tiny model, loaded 2-core
// machine; docs/real-vllm.md), the prior 50 ms. So the fixed cost t0 is learned, and
// attention gets a factor r relative to the rest:
//   TTFT = t0 + s * [c_prefill (W+U)/1000 + r c_attn A + c_run R],
//   A = U (C + U/2) / 32768 / 1000,
// with s the one-factor fit above on that shape (of TTFT - t0). t0 and r are learned from
// the observations that had nothing queued ahead (W below 2% of U): their features are
// what the request was, not an estimate that itself depends on r (W is in tokens at the
// learned prefill rate, which counts the queued requests' attention with r; fitting r on
// queued observations fed back through W and ran away: 12 s TTFTs predicted as 68 s in
// the router's queueing test).
// t0: from an unqueued TTFT whose learned work s g explains at most kFixedShare of it,
// t0 moves towards TTFT - s g by kFixedGain of the difference, each step capped at
// kFixedStepCap spreads (below), so an outlier moves it by the cap at most and one-sided
// stalls bias it little. An unqueued TTFT that the work explains mostly (prefill-
// dominated: with every prompt alike t0 and s are collinear, and a free joint fit of both
// made routing worse, above) moves t0 back towards the prior by 1 - kForgetting. So a
// TTFT the per-token cost cannot explain at the learned speed goes to t0 (1 s for a
// cached prompt of ~15 ms of work), one it can (10 s for 4 s of prior work) to s.
// r: on the unqueued observations, y = TTFT - t0 is fitted as a u + b v (u the prefill and
// running components, v the attention one) by ridge regression towards the data's own
// best one-factor fit, the penalty kShapeKappa x each component's decayed sum of squares
// (relative to the data: a term the data pins down follows it to within kappa / (1 +
// kappa); prefill and attention moving together keep the prior's ratio); r = b / a,
// blended towards 1 with weight kPriorWeight / (data + kPriorWeight) while the data weigh
// little, clamped to [kMinShape, kMaxShape]. A 2x2 solve from decayed sums, never a
// recursive update. Without learn_shape, r = 1 and t0 = 50 ms (the speed-only model).
// Measured (ttft_predictor_test, virtual time): an engine with a 1 s fixed cost, 7 in 8
// requests cached, 10% of TTFTs 5x stalls: cached requests predicted within 4% (with
// t0 = 50 ms: 92% off), cold ones 41% (61%); a 20 ms engine: t0 31 ms.
//
// Robustness: a TTFT far from the prediction (a stall, a queue the router could not see)
// counts with a Huber weight: 1 while |error| <= max(kHuberK x spread, kHuberFloor x
// prediction), limit / |error| beyond, in the speed and shape fits; the spread is a decayed mean of
// |error| (forgetting kSpreadForgetting), each clipped at twice the limit, so an outlier
// moves the fit by a bounded amount and a lasting change is followed within tens of
// observations. State is a fixed set of numbers: memory does not grow with observations;
// results depend only on the observations and their order (deterministic in virtual time).
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

  explicit TtftPredictor(bool learn_shape = true) : learn_shape_(learn_shape) {}
  // The speed prior: s before any observation and the pseudo-observation that is never
  // forgotten (1 = the prior coefficients; clamped to [kMinScale, kMaxScale]). The router
  // sets it from the endpoint's offline profile when the deployment gives one
  // (EndpointInfo::prefill_profile: its per-token cost over c_prefill), so that a pool of
  // mixed GPUs is routed as mixed before each endpoint has finished a request. Call it
  // before the first Observe.
  void SetSpeedPrior(double s);
  TtftPrediction Predict(const TtftFeatures& f) const;
  // One observation: a request dispatched with features `f` had TTFT `observed_s`.
  void Observe(const TtftFeatures& f, double observed_s);

  // Effective {t0, c_prefill, c_attn, c_run} (the prior's, times the learned factors).
  Vec coefficients() const;
  // The learned speed factor s (1 = the prior; 2 = twice as slow).
  double scale() const;
  // The learned attention-to-prefill factor r (1 = the prior's shape).
  double shape() const;
  // The learned fixed cost t0 (seconds; the prior's 50 ms without learn_shape).
  double fixed_cost() const;
  int observations() const { return n_; }
  // The learned cost of `f` without t0 (seconds): predicted TTFT - t0.
  double Work(const TtftFeatures& f) const;

  static Vec Features(const TtftFeatures& f);
  static Vec PriorCoefficients();
  // The prior's cost of `f` without t0 (seconds): g in the model above.
  static double PriorWork(const TtftFeatures& f);

  static constexpr double kForgetting = 0.97;
  static constexpr double kPriorWeight = 1.0;  // s^2: one observation of 1 s of work
  // The speed prior's weight (s^2 of work): a tenth of one observation of 1 s of work, so
  // that the first cold requests on a fast engine set its speed. At 1 s^2 the prior
  // outweighed them there: vLLM CPU with the tiny model prefills a 3,700-token prompt in
  // ~0.25 s where the prior says ~1 s (g ~ 1 s, so each such observation weighed as much as
  // the prior), and with ~6 cold requests among 150, each forgotten by the cached ones
  // after, cold TTFTs stayed predicted 2-3x too high (docs/real-vllm.md, 2026-12-03).
  static constexpr double kSpeedPriorWeight = 0.1;
  static constexpr double kMinScale = 1e-3, kMaxScale = 20;
  static constexpr double kShapeKappa = 0.01;
  static constexpr double kMinShape = 1e-3, kMaxShape = 1e3;
  // Fixed cost: learned from unqueued TTFTs of which the learned work explains at most
  // kFixedShare, by steps of kFixedGain x the error capped at kFixedStepCap spreads;
  // bounded by kMaxFixedCost (seconds; above any unqueued TTFT measured: ~1 s on vLLM CPU
  // under heavy load).
  static constexpr double kFixedShare = 0.5, kFixedGain = 0.2, kFixedStepCap = 0.05;
  static constexpr double kMaxFixedCost = 30.0;
  // Huber weights: 2.5 spreads (a spread being the mean |error|, ~0.8 standard deviations
  // for normal errors: ~2 sigma), never below 25% of the prediction (noise-free data would
  // otherwise shrink the spread to 0 and down-weight every change); the spread's memory is
  // ~10 observations.
  static constexpr double kHuberK = 2.5, kHuberFloor = 0.25;
  static constexpr double kSpreadForgetting = 0.9;

 private:
  void SolveShape();
  // The Huber weight of an observation with this error (observed - predicted); updates the
  // spread.
  double RobustWeight(double residual_s, double predicted_s);
  // The prior's cost of `f` without t0, with attention weighted by the learned shape.
  double ShapedWork(const TtftFeatures& f) const;

  bool learn_shape_;
  double prior_scale_ = 1;             // SetSpeedPrior
  double sum_gy_ = kSpeedPriorWeight;  // one-factor fit: decayed sums, prior included
  double sum_gg_ = kSpeedPriorWeight;
  double t0_ = 0.05;  // the learned fixed cost; starts at the prior's
  // Shape fit, on observations with nothing queued: decayed weighted sums of u^2, u v,
  // v^2, u y, v y with u = the prefill and running components, v = the attention
  // component (prior costs, seconds), y = TTFT - t0.
  double suu_ = 0, suv_ = 0, svv_ = 0, suy_ = 0, svy_ = 0;
  double r_ = 1;          // solved after each unqueued observation
  double spread_s_ = -1;  // mean |error|; < 0 before the first observation
  int n_ = 0;
};

}  // namespace kinference::routing
