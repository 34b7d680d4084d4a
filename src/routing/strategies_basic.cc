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

// Lowest predicted TTFT plus the extra prefill the choice costs the endpoint, beyond the
// cheapest candidate's (the default); ties by in-flight.
//
// Pure argmin of the predicted TTFT is myopic: moving a conversation off the endpoint
// that caches it buys this request a little time at the price of recomputing its whole
// history, which delays every request queued behind it there and loses the cache
// affinity of the conversation's later turns. Charging that extra work once more
// (weight kExtraWorkWeight) keeps affinity unless the warm endpoint's queue is longer
// than twice the extra work. Measured (kinference simulate, 3 x l40s-27b-fp8, multiturn,
// 200 sessions, 2 trials; TTFT p50/p90): weight 0: 0.41/0.87 s at 0.15 req/s, 6.7/40 s
// at 0.5; weight 1: 0.41/0.89 s and 1.85/27 s; weight 2: 0.41/1.07 s and 1.86/26 s.
class PredictedTtftStrategy final : public Strategy {
 public:
  static constexpr double kExtraWorkWeight = 1.0;

  explicit PredictedTtftStrategy(const StrategyOptions& o) : rng_(o.seed) {}
  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    std::vector<double> tie(c.size());
    double cheapest = std::numeric_limits<double>::infinity();
    for (const CandidateView& v : c) cheapest = std::min(cheapest, OwnWork(v));
    for (size_t i = 0; i < c.size(); ++i) {
      scores[i] = c[i].predicted_ttft_s + kExtraWorkWeight * (OwnWork(c[i]) - cheapest);
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
