// Built-in strategies: random, round-robin, least-load, prefix, predicted-ttft.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "routing/strategy.h"

namespace kinference::routing {
namespace {

double ScrapedLoad(const CandidateView& c) {
  if (c.metrics == nullptr) return 0;
  return c.metrics->num_requests_waiting.value_or(0) + c.metrics->num_requests_running.value_or(0);
}

// Uniform choice, seeded: what a Kubernetes Service (kube-proxy) gives.
class RandomStrategy final : public Strategy {
 public:
  explicit RandomStrategy(const StrategyOptions& o) : rng_(o.seed) {}
  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    size_t pick = SplitMix64(rng_) % c.size();
    for (size_t i = 0; i < c.size(); ++i) scores[i] = i == pick ? 0 : 1;
    return pick;
  }

 private:
  uint64_t rng_;
};

// Cycles through the candidates in the order given.
class RoundRobinStrategy final : public Strategy {
 public:
  explicit RoundRobinStrategy(const StrategyOptions&) {}
  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    size_t pick = next_++ % c.size();
    for (size_t i = 0; i < c.size(); ++i)
      scores[i] = static_cast<double>((i + c.size() - pick) % c.size());
    return pick;
  }

 private:
  uint64_t next_ = 0;
};

// Fewest in-flight requests (own bookkeeping); ties by scraped waiting + running.
class LeastLoadStrategy final : public Strategy {
 public:
  explicit LeastLoadStrategy(const StrategyOptions& o) : rng_(o.seed) {}
  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    std::vector<double> tie(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      scores[i] = c[i].in_flight;
      tie[i] = ScrapedLoad(c[i]);
    }
    return ArgMin(scores, tie, rng_);
  }

 private:
  uint64_t rng_;
};

// Largest expected prefix-cache hit; ties by in-flight, then scraped load.
class PrefixStrategy final : public Strategy {
 public:
  explicit PrefixStrategy(const StrategyOptions& o) : rng_(o.seed) {}
  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    std::vector<double> tie(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      scores[i] = -c[i].matched_tokens;
      // In-flight dominates; scraped load (bounded well below 1e6) breaks its ties.
      tie[i] = c[i].in_flight * 1e6 + ScrapedLoad(c[i]);
    }
    return ArgMin(scores, tie, rng_);
  }

 private:
  uint64_t rng_;
};

// The part of a prediction that is the request's own work (not waiting for others).
double OwnWork(const CandidateView& v) {
  return std::max(0.0, v.predicted_ttft_s - v.queue_wait_s);
}

// Lowest predicted TTFT plus the costs the choice puts on later requests (the default);
// ties by in-flight. Score, in seconds, for candidate i with own work w_i (its predicted
// TTFT less the queue wait) and per-token cost p_i = w_i / uncached_i:
//   predicted_ttft_i
//   + kExtraWorkWeight * (w_i - min_j w_j)   extra prefill vs. the cheapest candidate
//   + kEvictWeight * reuse * p_i * evicted_i recomputing the cached prefixes it pushes out,
//                                            as far as traffic reuses prefixes at all
//   + kFillWeight * load * w_i * cache_fill_i
//                                            future load: a fuller cache attracts more
//                                            affinity traffic (fill x recent reuse), which
//                                            costs only while requests queue (load = mean
//                                            requests awaiting a first token per
//                                            candidate, capped at 1)
// Pure argmin of the predicted TTFT is myopic three ways. (1) Moving a conversation off
// the endpoint that caches it buys this request a little time at the price of
// recomputing its history, which delays everyone queued behind it there and loses the
// affinity of its later turns. (2) A cold prompt placed on an endpoint whose cache is
// full evicts prefixes other requests will come back for. (3) Among equally cold
// candidates, the one whose cache already holds more prefixes will get more of their
// repeat traffic (SGLang's cache_aware router places cold requests on the smallest
// tree for the same reason); a warm candidate has small w_i, so the term barely touches
// affinity. The fill is scaled by how much of the traffic reuses cached prefixes: with
// raw fill, `independent` at light load (nothing reused) preferred emptier caches over
// idle replicas (TTFT p90 7.10 s against 6.86 s). Measured (kinference simulate --scenario
// capacity, seed 1, 3 trials, steady-state goodput in req/min at c=32, shared-prefix / multiturn;
// sglang 104.5 / 66.8): weights (1, 0, 0): 95.2 / 63.8; (2, 0, 0): 95.2 / 66.8; (1, 1, 0): 102.2 /
// 64.4; (2, 1, 1): 102.7 / 66.8 (seed 11: 102.9 vs sglang 100.3); with replies learned
// (Router::OnCompletionText) and fill x reuse: 103.4 / 66.8. Evict weight 0.5-4 and fill
// weight 0.3-3 change it by < 2%. Earlier (multiturn, 200 sessions, TTFT
// p50/p90): extra-work weight 0: 0.41/0.87 s at 0.15 req/s, 6.7/40 s at 0.5; weight 1:
// 0.41/0.89 s and 1.85/27 s; weight 2: 0.41/1.07 s and 1.86/26 s.
// The reuse and load factors (2026-11-30; light-load seeds 1000-1029, TTFT p50/p90 and
// e2e p50 pooled; trace: 600-line slices at lines 0, 2000, ..., 10000, 12 x h100, mean
// TTFT p90 at speed 1 / 1.5 / 2): without them independent p90 6.86 s (an idle replica
// lost to one whose full cache held fewer tokens to evict, though nothing is reused),
// multiturn p50 0.613 s, shared-prefix e2e p50 11.43 s, trace 4.46 / 5.14 / 9.16 s; with
// them 6.76 s, 0.610 s, 11.40 s and 4.43 / 5.01 / 9.04 s (mooncake 4.40 / 5.09 / 10.66,
// llmd-sticky 4.45 / 5.11 / 10.06, sglang 4.92 / 6.31 / 9.88). The fill term at light load
// put cold prompts on emptier but busier replicas, where their prefill stalled others'
// decodes. Capacity goodput (30 trials) unchanged within noise (c=32 shared-prefix 101.1
// against 101.0; sglang 101.6). Load-scaling the extra-work weight as well was tried:
// trace speed 1 p50 1.09 -> 1.12 s, not kept.
class PredictedTtftStrategy final : public Strategy {
 public:
  static constexpr double kExtraWorkWeight = 2.0;
  static constexpr double kEvictWeight = 1.0;
  static constexpr double kFillWeight = 1.0;

  explicit PredictedTtftStrategy(const StrategyOptions& o) : rng_(o.seed) {}
  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    std::vector<double> tie(c.size());
    double cheapest = std::numeric_limits<double>::infinity();
    // How loaded the candidates are: mean requests awaiting their first token, capped at 1.
    double awaiting = 0;
    for (const CandidateView& v : c) {
      cheapest = std::min(cheapest, OwnWork(v));
      awaiting += v.awaiting_first_token;
    }
    const double load = std::clamp(awaiting / static_cast<double>(c.size()), 0.0, 1.0);
    for (size_t i = 0; i < c.size(); ++i) {
      const double own = OwnWork(c[i]);
      const double per_token = c[i].uncached_tokens > 0 ? own / c[i].uncached_tokens : 0;
      scores[i] = c[i].predicted_ttft_s + kExtraWorkWeight * (own - cheapest) +
                  kEvictWeight * c[i].recent_reuse * per_token * c[i].evicted_tokens +
                  kFillWeight * load * own * c[i].cache_fill;
      tie[i] = c[i].in_flight;
    }
    return ArgMin(scores, tie, rng_);
  }

 private:
  uint64_t rng_;
};

template <typename T>
StrategyFactory Make() {
  return
      [](const StrategyOptions& o) -> std::unique_ptr<Strategy> { return std::make_unique<T>(o); };
}

}  // namespace

std::vector<std::pair<std::string, StrategyFactory>> BuiltinStrategies() {
  return {{"random", Make<RandomStrategy>()},
          {"round-robin", Make<RoundRobinStrategy>()},
          {"least-load", Make<LeastLoadStrategy>()},
          {"prefix", Make<PrefixStrategy>()},
          {"predicted-ttft", Make<PredictedTtftStrategy>()}};
}

}  // namespace kinference::routing
