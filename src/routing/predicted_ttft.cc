// The default strategy, `predicted-ttft`: the lowest predicted TTFT plus what the choice
// costs the rest of the pool. Score, in seconds, for candidate i with own work w_i (its
// predicted TTFT less the queue wait and less the endpoint's fixed cost t0: the prefill
// compute that occupies engine steps), per-token cost p_i = w_i / uncached_i, and n the
// request's expected output tokens:
//
//   predicted_ttft_i
//   + kExtraWorkWeight * busy_i * (w_i - min_j w_j)   extra prefill vs. the cheapest
//   + kEvictWeight * reuse * p_i * evicted_i         cached prefixes it pushes out
//   + kFillWeight * load * w_i * cache_fill_i         future affinity traffic
//   + decode_i                                        decoding, for everyone there
//
// The first four terms (measured in docs/routing.md, "Costs a choice puts on later
// requests"): pure argmin of the predicted TTFT is myopic. (1) Moving a conversation off
// the endpoint that caches it buys this request a little time at the price of
// recomputing its history, which delays everyone queued behind it there: extra work
// weighs double (multiturn c = 32 goodput 63.8 -> 66.8 req/min). (2) A cold prompt on a
// full cache evicts prefixes others come back for, as far as traffic reuses prefixes
// (reuse: EWMA of the expected-hit fraction of recent dispatches). (3) Among equally cold
// candidates the fuller cache attracts more repeat traffic, which costs while requests
// queue (load: mean requests awaiting a first token per candidate, capped at 1).
//
// busy_i (issue #13): the extra work's weight stands for the requests it delays, so it
// is scaled by min(1, sequences decoding or awaiting a first token on i): prefilling on
// an idle replica delays nobody. Without it a burst of requests sharing one new long
// prefix all queued behind the first one's prefill on one replica (4 x l40s, 48
// requests within 10 ms: TTFT p50 9.96 s, e2e p50 46.3 s); with it they split as
// Mooncake's do (7.70 s, 24.4 s).
//
// decode_i (issue #13): what decoding there costs, from the endpoint's learned decode
// model (routing/decode_model.h), with R_i the sequences decoding there now and A_i the
// router's requests there still awaiting a first token (queued ahead of this one):
//   n * ITL_i(R_i + A_i + 1)             this request's own decode, next to those ahead
//   + R_i * dITL_i * n                   the slowdown its decoding adds to the others
//   + R_i * w_i                          its prefill chunks stall theirs
// so that a replica piled with decodes stops looking cheap because its cache is warm:
// with one 32,000-token prefix shared by every request at 1 request/s on 4 x l40s,
// affinity alone put every decode on one or two replicas (ITL p50 0.24 s, e2e p50 64 s;
// Mooncake 15.0 s); with decode_i, e2e p50 15.7 s. Three limits, each measured on the
// capacity scenario (3 x l40s, shared-prefix, c = 32, goodput req/min at seeds 1 / 11 /
// 21; 103.4 / 102.5 / 102.5 before): counting requests still awaiting their first token
// as decoding (honest for a burst, but they are queued turns in a closed loop) moved
// conversations off their replicas (multiturn 76.8 -> 54.3); decode costs on a request
// cold everywhere placed new prefixes by decode load instead of cache fill, and the
// partition of prefixes over caches broke (84.5); and decode relief paying for extra
// prefill (a hot prefix replicated to a quieter replica) evicted prefixes in use, whose
// misses cascaded (87 -> 99.9). So the slowdown and stall terms count running sequences
// only, only for a request cached somewhere, and a candidate that would prefill more
// than the cheapest one by kColdSlackS is charged at least the cheapest one's decode
// cost unless its cache has room (prefix index at most kRoomFill full): decode load
// chooses among the warm, and pays for replication only onto a cache it will not evict
// from (without that exception the large prefix was never replicated by decode load:
// e2e p50 64 s again; any room threshold from 1e-6 to 0.5 gave the same figures).
// Result: 102.9 / 102.5 / 102.5 and multiturn 76.8, bursts and the large prefix as above.
//
// The fixed cost and the requests queued ahead (after the learned t0, ab9f666, made the
// large-prefix tail worse: 4 x l40s, one 32,000-token prefix, 0.25 requests/s, TTFT p90
// 0.62 -> 1.62 s): t0 (0.40 s there, mostly the engine front end's per-token time for a
// 32k prompt) is no prefill chunk and stalls nobody's decoding, but it sat in w_i, so a
// warm replica with R_i decoding was charged R_i x t0 extra, and a replica still
// prefilling the prefix for the first time (R_i = 0) looked cheap: requests queued for up
// to 13 s behind that cold prefill. And ITL was taken at R_i + 1, so the requests already
// queued there (A_i) looked as if they would not decode next to this one: each arrival
// during the cold prefill saw the same empty replica. With w_i net of t0 and the own ITL at
// R_i + A_i + 1 (1 trial, seed 1): TTFT p90 0.61 s at 0.25/s (prefix affinity 0.64 s),
// 6.2 s at 0.5/s (8.3 s), 8.0 s at 1/s (10.9 s); bursts of 24 and 48 TTFT p90 7.70 ->
// 7.35 s and 8.59 -> 8.06 s; capacity, overload, small-pool unchanged. Counting A_i in the
// slowdown term too (A_i + R_i others slowed) fixed the large prefix fully (TTFT p90
// 0.62-0.70 s at every rate) but moved conversations in the closed loop (capacity
// multiturn c = 32 goodput 76.8 -> 60.5 req/min: 13 moved turns, then one replica's cache
// overflowed and its hits cascaded away), so it is not used; nor is a floor that keeps a
// colder candidate from gaining by the warm one's queued requests (large prefix at 1/s
// back to 11.4 s p90).
//
// A prefill in progress (issue #13, large-prefix at 0.5 and 1 request/s): the prefix
// index holds a prompt's blocks from its dispatch, so a replica still prefilling the
// 32,000-token prefix for the first time (13.9 s) looked as warm as one that had cached
// it, and cheaper on decoding: nothing decodes there yet (R_i = 0: no slowdown or stall
// charged), while the requests queued behind that prefill, which will decode next to this
// one, count only in its own ITL. That relief (~7 s at 1/s) outweighed the wait, and with
// the learned cost underestimating the cold prefill by ~40% (predicted 8.3 s, so at 0.5/s
// a 12 s wait looked like 6 s) requests were sent behind it until it ended: TTFT p90 6.23 s
// at 0.5/s and 7.99 s at 1/s (round-robin 0.61 / 0.63 s). Now a candidate whose match is
// in progress (CandidateView::in_progress_tokens: blocks a request of ours still awaiting
// its first token there put in the index) is charged at least the decode cost of a
// candidate holding the hit now, as warm (own work within kColdSlackS) and with a lower
// predicted TTFT, when there is one: decode load chooses among replicas that hold the
// prefix, and waiting on a replication pays only when it ends sooner than the warm
// replicas' queues. Candidates that are all cold or all in progress (a pool's start, a
// burst on a new prefix) are scored as before. Measured (1 trial, seed 1): TTFT p90 0.62 s
// at 0.5/s and 0.71 s at 1/s, e2e p90 22.3 -> 15.1 s and 22.5 -> 18.4 s; capacity, burst,
// overload, small-pool, routers, cost-shape, light-load, heterogeneous, restarts unchanged
// (docs/routing.md, "A prefill in progress is not a warm cache").
//
// Near ties (within kNearTieS or kNearTieFraction of the best) break on load: fewest in
// flight, then fewest decoding, then score; the rest at random. With 1% / 5 ms the
// capacity figure fell to 99.9 at seed 1 (load beat small real differences), so the
// tolerance is small: it separates same-instant decisions that see identical
// candidates, not real differences.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "routing/strategy.h"

namespace kinference::routing {
namespace {

// The part of a prediction that is the request's own prefill compute: not waiting for
// others, not the endpoint's fixed cost per request.
double OwnWork(const CandidateView& v) {
  return std::max(0.0, v.predicted_ttft_s - v.queue_wait_s - v.fixed_cost_s);
}

class PredictedTtftStrategy final : public Strategy {
 public:
  static constexpr double kExtraWorkWeight = 2.0;
  static constexpr double kEvictWeight = 1.0;
  static constexpr double kFillWeight = 1.0;
  static constexpr double kColdSlackS = 0.1;
  static constexpr double kNearTieS = 0.001;
  static constexpr double kNearTieFraction = 0.001;

  static constexpr double kRoomFill = 0.5;

  explicit PredictedTtftStrategy(const StrategyOptions& o)
      : extra_work_(kExtraWorkWeight * o.Weight("extra_work")),
        evict_(kEvictWeight * o.Weight("evict")),
        fill_(kFillWeight * o.Weight("fill")),
        decode_(o.Weight("decode")),
        rng_(o.seed) {}

  size_t Choose(const RequestFeatures&, std::span<const CandidateView> c, std::span<double> scores,
                Seconds) override {
    double load = 0, max_match = 0;
    size_t cheapest = 0;
    std::vector<double> own(c.size()), decode(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      own[i] = OwnWork(c[i]);
      if (own[i] < own[cheapest]) cheapest = i;
      load += c[i].awaiting_first_token;
      max_match = std::max(max_match, c[i].matched_tokens);
    }
    load = std::clamp(load / static_cast<double>(c.size()), 0.0, 1.0);
    for (size_t i = 0; i < c.size() && max_match > 0; ++i) {
      const double n = c[i].output_tokens;
      const double running = std::max(0.0, c[i].decode_seqs - c[i].awaiting_first_token);
      decode[i] = n * c[i].itl_s + running * c[i].itl_delta_s * n + running * own[i];
    }
    // Prefill in progress (header): charged at least the decode cost of the candidate
    // holding the hit now, as warm, that gives the first token sooner.
    const std::vector<double> raw = decode;
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < c.size(); ++i) {
      if (own[i] > own[cheapest] + kColdSlackS && c[i].index_fill > kRoomFill)
        decode[i] = std::max(decode[i], decode[cheapest]);
      if (c[i].in_progress_tokens > 0) {
        size_t ref = i;
        for (size_t j = 0; j < c.size(); ++j)
          if (c[j].in_progress_tokens <= 0 && own[j] <= own[i] + kColdSlackS &&
              c[j].predicted_ttft_s < c[ref].predicted_ttft_s)
            ref = j;
        decode[i] = std::max(decode[i], raw[ref]);
      }
      const double per_token = c[i].uncached_tokens > 0 ? own[i] / c[i].uncached_tokens : 0;
      const double busy = std::min(1.0, c[i].decode_seqs);
      scores[i] = c[i].predicted_ttft_s + extra_work_ * busy * (own[i] - own[cheapest]) +
                  evict_ * c[i].recent_reuse * per_token * c[i].evicted_tokens +
                  fill_ * load * own[i] * c[i].cache_fill + decode_ * decode[i];
      best = std::min(best, scores[i]);
    }
    const double slack = std::max(kNearTieS, kNearTieFraction * std::abs(best));
    size_t pick = c.size();
    std::vector<size_t> ties;
    for (size_t i = 0; i < c.size(); ++i) {
      if (scores[i] > best + slack) continue;
      if (pick == c.size() || Better(c[i], scores[i], c[pick], scores[pick])) {
        pick = i;
        ties.assign(1, i);
      } else if (!Better(c[pick], scores[pick], c[i], scores[i])) {
        ties.push_back(i);
      }
    }
    if (ties.size() > 1) pick = ties[SplitMix64(rng_) % ties.size()];
    return pick;
  }

 private:
  static bool Better(const CandidateView& a, double sa, const CandidateView& b, double sb) {
    if (a.in_flight != b.in_flight) return a.in_flight < b.in_flight;
    if (a.decode_seqs != b.decode_seqs) return a.decode_seqs < b.decode_seqs;
    return sa < sb;
  }
  // The terms' weights: the constants above times StrategyOptions::weights.
  double extra_work_, evict_, fill_, decode_;
  uint64_t rng_;
};

}  // namespace

StrategyFactory MakePredictedTtftFactory() {
  return [](const StrategyOptions& o) -> std::unique_ptr<Strategy> {
    return std::make_unique<PredictedTtftStrategy>(o);
  };
}

}  // namespace kinference::routing
