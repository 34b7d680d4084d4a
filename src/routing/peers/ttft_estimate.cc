// `mooncake` and `llmd-sticky`: the two peers that compare endpoints by a fixed-rate TTFT
// estimate (see peers.h for sources). Both use the router's view:
//   estimate = (queued_prefill_tokens + uncached_tokens) / prefill_tokens_per_s
// i.e. the prefill work in flight ahead of the request (the router's own requests
// awaiting a first token plus scraped other traffic, endpoint_state.h) plus the request's
// own uncached prefill given the router's prefix match, at the endpoint's offline
// profile when the deployment gives one (EndpointInfo::prefill_profile: Mooncake's
// Conductor models prefill time from offline measurements of request and cached
// length; the simulator passes each replica's cost model), else at a constant
// throughput (TtftPredictor's prior, 4000 tokens/s, unless set).
//
// mooncake    : lowest estimate wins; ties by in-flight, then random.
// llmd-sticky : the warmest endpoint (largest matched_tokens > 0; among equally warm, the
//               lowest estimate) keeps the request unless its estimate exceeds the best
//               other endpoint's by more than penalty_s. Reported scores are the
//               estimates with penalty_s taken off the warmest, whose minimum is the
//               choice (the warmest wins an exact tie).
#include <algorithm>
#include <vector>

#include "routing/peers/peer_util.h"
#include "routing/peers/peers.h"

namespace kinference::routing::peers {
namespace {

double Rate(double configured) { return configured > 0 ? configured : PriorPrefillTokensPerS(); }

// With the endpoint's offline profile (EndpointInfo::prefill_profile), as the designs
// describe: the queue at its per-token cost and the request's own prefill with its
// attention over the cached context; else the fixed rate.
double Estimate(const CandidateView& c, double rate) {
  const PrefillProfile& p = c.info->prefill_profile;
  if (p.known())
    return c.queued_prefill_tokens * p.s_per_token + p.Seconds(c.uncached_tokens, c.matched_tokens);
  return (c.queued_prefill_tokens + c.uncached_tokens) / rate;
}

class MooncakeStrategy final : public Strategy {
 public:
  MooncakeStrategy(const StrategyOptions& o, const MooncakeOptions& m)
      : rate_(Rate(m.prefill_tokens_per_s)), rng_(o.seed) {}

  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    std::vector<double> tie(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      scores[i] = Estimate(c[i], rate_);
      tie[i] = c[i].in_flight;
    }
    return ArgMin(scores, tie, rng_);
  }

 private:
  double rate_;
  uint64_t rng_;
};

class LlmdStickyStrategy final : public Strategy {
 public:
  LlmdStickyStrategy(const StrategyOptions& o, const LlmdStickyOptions& l)
      : rate_(Rate(l.prefill_tokens_per_s)), penalty_s_(l.penalty_s), rng_(o.seed) {}

  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    size_t warm = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
      scores[i] = Estimate(c[i], rate_);
      if (c[i].matched_tokens <= 0) continue;
      if (warm == c.size() || c[i].matched_tokens > c[warm].matched_tokens ||
          (c[i].matched_tokens == c[warm].matched_tokens && scores[i] < scores[warm]))
        warm = i;
    }
    std::vector<double> tie(c.size());
    for (size_t i = 0; i < c.size(); ++i) tie[i] = i == warm ? -1 : c[i].in_flight;
    if (warm < c.size()) scores[warm] -= penalty_s_;
    return ArgMin(scores, tie, rng_);
  }

 private:
  double rate_;
  double penalty_s_;
  uint64_t rng_;
};

}  // namespace

std::unique_ptr<Strategy> MakeMooncake(const StrategyOptions& o, const MooncakeOptions& m) {
  return std::make_unique<MooncakeStrategy>(o, m);
}

std::unique_ptr<Strategy> MakeLlmdSticky(const StrategyOptions& o, const LlmdStickyOptions& l) {
  return std::make_unique<LlmdStickyStrategy>(o, l);
}

}  // namespace kinference::routing::peers
