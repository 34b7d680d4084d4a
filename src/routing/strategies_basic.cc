// Built-in strategies: random, round-robin, least-load, prefix; predicted-ttft is in
// predicted_ttft.cc.
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

template <typename T>
StrategyFactory Make() {
  return
      [](const StrategyOptions& o) -> std::unique_ptr<Strategy> { return std::make_unique<T>(o); };
}

}  // namespace

// predicted_ttft.cc
StrategyFactory MakePredictedTtftFactory();

std::vector<std::pair<std::string, StrategyFactory>> BuiltinStrategies() {
  return {{"random", Make<RandomStrategy>()},
          {"round-robin", Make<RoundRobinStrategy>()},
          {"least-load", Make<LeastLoadStrategy>()},
          {"prefix", Make<PrefixStrategy>()},
          {"predicted-ttft", MakePredictedTtftFactory()}};
}

}  // namespace kinference::routing
