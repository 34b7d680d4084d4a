#include "routing/strategy.h"

#include <gtest/gtest.h>

#include <set>

namespace kinference::routing {
namespace {

struct Fixture {
  std::vector<EndpointInfo> infos;
  std::vector<MetricsSnapshot> metrics;
  std::vector<CandidateView> views;
  explicit Fixture(size_t n) : infos(n), metrics(n), views(n) {
    for (size_t i = 0; i < n; ++i) {
      infos[i].id = "e" + std::to_string(i);
      views[i].info = &infos[i];
      views[i].metrics = &metrics[i];
    }
  }
};

size_t ChooseWith(std::string_view name, const std::vector<CandidateView>& v,
                  std::vector<double>* scores_out = nullptr) {
  auto f = FindStrategy(name);
  EXPECT_TRUE(f.has_value()) << name;
  auto s = (*f)(StrategyOptions{});
  std::vector<double> scores(v.size());
  size_t pick = s->Choose(RequestFeatures{}, v, scores, 0);
  if (scores_out) *scores_out = scores;
  return pick;
}

TEST(Strategy, BuiltinsAreRegistered) {
  auto names = RegisteredStrategyNames();
  for (const char* n : {"random", "round-robin", "least-load", "prefix", "predicted-ttft"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_FALSE(FindStrategy("no-such-strategy").has_value());
}

TEST(Strategy, RandomIsSeededAndCoversAll) {
  Fixture fx(4);
  auto f = *FindStrategy("random");
  auto a = f(StrategyOptions{7});
  auto b = f(StrategyOptions{7});
  std::vector<double> scores(4);
  std::set<size_t> seen;
  for (int i = 0; i < 100; ++i) {
    size_t pa = a->Choose({}, fx.views, scores, 0);
    EXPECT_EQ(pa, b->Choose({}, fx.views, scores, 0));
    seen.insert(pa);
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(Strategy, RoundRobinCycles) {
  Fixture fx(3);
  auto s = (*FindStrategy("round-robin"))(StrategyOptions{});
  std::vector<double> scores(3);
  std::vector<size_t> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(s->Choose({}, fx.views, scores, 0));
  EXPECT_EQ(picks, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(Strategy, LeastLoadPrefersFewestInFlightThenScrapedLoad) {
  Fixture fx(3);
  fx.views[0].in_flight = 3;
  fx.views[1].in_flight = 1;
  fx.views[2].in_flight = 1;
  fx.metrics[1].num_requests_waiting = 5;
  fx.metrics[2].num_requests_running = 2;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("least-load", fx.views, &scores), 2u);
  EXPECT_EQ(scores, (std::vector<double>{3, 1, 1}));
}

TEST(Strategy, PrefixPrefersLargestMatchThenLeastLoad) {
  Fixture fx(3);
  fx.views[0].matched_tokens = 100;
  fx.views[1].matched_tokens = 900;
  fx.views[2].matched_tokens = 900;
  fx.views[1].in_flight = 2;
  fx.views[2].in_flight = 1;
  EXPECT_EQ(ChooseWith("prefix", fx.views), 2u);
  fx.views[0].matched_tokens = 1000;
  fx.views[0].in_flight = 50;
  EXPECT_EQ(ChooseWith("prefix", fx.views), 0u);
}

TEST(Strategy, PredictedTtftPicksArgminOfTtftPlusExtraWork) {
  Fixture fx(3);
  // predicted TTFT (of which queue wait): own work 0.1, 0.2, 0.3 s.
  fx.views[0].predicted_ttft_s = 0.5;
  fx.views[0].queue_wait_s = 0.4;
  fx.views[1].predicted_ttft_s = 0.2;
  fx.views[2].predicted_ttft_s = 0.3;
  for (auto& v : fx.views) v.decode_seqs = 1;  // busy: extra prefill delays someone
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 1u);
  // Score = predicted TTFT + 2 x own work beyond the cheapest candidate's (0.1 s).
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_DOUBLE_EQ(scores[0], 0.5);
  EXPECT_DOUBLE_EQ(scores[1], 0.4);
  EXPECT_DOUBLE_EQ(scores[2], 0.7);
}

TEST(Strategy, PredictedTtftChargesEvictingCachedPrefixes) {
  Fixture fx(2);
  // Two idle endpoints, the same cold 1000-token prefill (1 s); b's cache is full, so
  // admitting the request there pushes 600 tokens of cached prefixes out.
  for (auto& v : fx.views) {
    v.predicted_ttft_s = 1.0;
    v.uncached_tokens = 1000;
  }
  fx.views[1].evicted_tokens = 600;
  for (auto& v : fx.views) v.recent_reuse = 1;  // every recent request found its prefix
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 0u);
  EXPECT_DOUBLE_EQ(scores[1] - scores[0], 0.6);  // recomputing them: 600 tokens at 1 ms
  // Half the traffic reuses prefixes: half the charge.
  for (auto& v : fx.views) v.recent_reuse = 0.5;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 0u);
  EXPECT_DOUBLE_EQ(scores[1] - scores[0], 0.3);
}

// Nothing is being reused (independent prompts): cached prefixes are worth nothing, so
// an idle replica is not passed over for a busy one with less to evict.
TEST(Strategy, PredictedTtftIgnoresEvictionWhenNothingIsReused) {
  Fixture fx(2);
  for (auto& v : fx.views) {
    v.predicted_ttft_s = 1.0;
    v.uncached_tokens = 1000;
    v.evicted_tokens = 1000;
  }
  fx.views[0].in_flight = 1;  // decoding a request
  fx.views[0].evicted_tokens = 200;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 1u);
  EXPECT_DOUBLE_EQ(scores[0], scores[1]);  // decided by the in-flight tie-break
}

TEST(Strategy, PredictedTtftPlacesColdWorkOnTheEmptierCache) {
  Fixture fx(2);
  for (auto& v : fx.views) {
    v.predicted_ttft_s = 1.0;
    v.uncached_tokens = 1000;
  }
  fx.views[0].cache_fill = 0.8;  // holds more prefixes: more affinity traffic to come
  fx.views[1].cache_fill = 0.2;
  // Requests are queueing (one awaiting its first token per candidate): the affinity
  // traffic a fuller cache attracts will cost queueing there.
  for (auto& v : fx.views) v.awaiting_first_token = 1;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 1u);
  EXPECT_DOUBLE_EQ(scores[0] - scores[1], 0.6);  // 1 s of own work x (0.8 - 0.2)
  // Half as loaded (one awaiting request over two candidates): half the term.
  fx.views[1].awaiting_first_token = 0;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 1u);
  EXPECT_DOUBLE_EQ(scores[0] - scores[1], 0.3);
  // A warm request's own work is small, so the term does not undo affinity.
  fx.views[0].predicted_ttft_s = 0.1;
  fx.views[0].uncached_tokens = 100;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views), 0u);
}

// Nothing queues: future affinity traffic costs nothing yet, so a cold request is not
// sent to an emptier cache on a replica that is busy decoding (its prefill would stall
// those decodes; light-load shared-prefix e2e p50 11.50 s with the term, 11.42 s without).
TEST(Strategy, PredictedTtftIgnoresCacheFillWhenNothingQueues) {
  Fixture fx(2);
  for (auto& v : fx.views) {
    v.predicted_ttft_s = 1.0;
    v.uncached_tokens = 1000;
  }
  fx.views[0].cache_fill = 0.8;
  fx.views[1].cache_fill = 0.2;
  fx.views[1].in_flight = 1;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 0u);
  EXPECT_DOUBLE_EQ(scores[0], scores[1]);
}

TEST(Strategy, PredictedTtftKeepsAffinityUnlessTheWarmQueueIsLong) {
  Fixture fx(2);
  // Warm: 0.1 s of own work behind a 0.9 s queue; cold idle: 0.8 s of prefill. The cold
  // one is predicted faster, but moving costs 0.7 s of extra prefill: stay warm.
  fx.views[0].predicted_ttft_s = 1.0;
  fx.views[0].queue_wait_s = 0.9;
  fx.views[1].predicted_ttft_s = 0.8;
  for (auto& v : fx.views) v.decode_seqs = 1;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views), 0u);
  // A queue longer than three times the extra work (2.1 s): the cold idle one wins.
  fx.views[0].predicted_ttft_s = 2.0;
  fx.views[0].queue_wait_s = 1.9;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views), 0u);
  fx.views[0].predicted_ttft_s = 2.4;
  fx.views[0].queue_wait_s = 2.3;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views), 1u);
}

// A burst of requests sharing one new long prefix: the first is still prefilling on a;
// b is idle. Extra prefill on an idle replica delays nobody, so the next one goes there
// instead of queueing behind the first (the extra-work charge scales with busy-ness).
TEST(Strategy, PredictedTtftPrefillsOnAnIdleReplicaRatherThanQueueing) {
  Fixture fx(2);
  fx.views[0].predicted_ttft_s = 7.0;  // 6.7 s of the first one's prefill ahead
  fx.views[0].queue_wait_s = 6.7;
  fx.views[0].matched_tokens = 16000;  // sent there: the index already counts it
  fx.views[0].awaiting_first_token = 1;
  fx.views[0].decode_seqs = 1;
  fx.views[1].predicted_ttft_s = 6.8;  // cold, idle
  fx.views[1].uncached_tokens = 16000;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 1u);
  EXPECT_DOUBLE_EQ(scores[1], 6.8);
  // Busy b: the extra 6.5 s of prefill counts double, and affinity wins.
  fx.views[1].decode_seqs = 1;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views), 0u);
}

// Among replicas that hold the prefix, the one with fewer decoding sequences wins even
// with a slightly longer predicted TTFT: the request decodes faster there and slows
// fewer others. A cold replica may not buy decode relief with extra prefill when its
// cache is in use, but may when its cache has room.
TEST(Strategy, PredictedTtftWeighsDecodingAmongWarmReplicas) {
  Fixture fx(3);
  for (auto& v : fx.views) {
    v.output_tokens = 256;
    v.itl_delta_s = 0.002;
  }
  // a: warm, 20 decoding (ITL 80 ms); b: warm, 2 decoding (45 ms) but 0.2 s more queue.
  fx.views[0].predicted_ttft_s = 0.3;
  fx.views[0].decode_seqs = 20;
  fx.views[0].itl_s = 0.080;
  fx.views[0].matched_tokens = 16000;
  fx.views[1].predicted_ttft_s = 0.5;
  fx.views[1].queue_wait_s = 0.2;
  fx.views[1].decode_seqs = 2;
  fx.views[1].itl_s = 0.045;
  fx.views[1].matched_tokens = 16000;
  // c: cold, idle, 6.5 s of prefill, its cache full.
  fx.views[2].predicted_ttft_s = 6.5;
  fx.views[2].uncached_tokens = 16000;
  fx.views[2].itl_s = 0.041;
  fx.views[2].index_fill = 0.9;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 1u);
  // a: 0.3 + 256 x 0.080 + 20 x 0.002 x 256 + 20 x 0.3 (prefill stall) = 37.02 s.
  EXPECT_NEAR(scores[0], 0.3 + 20.48 + 10.24 + 6.0, 1e-9);
  // Without b, the cold c would save a's decoding, but its cache is in use: it is charged
  // a's decode cost and stays out.
  std::vector<CandidateView> ac = {fx.views[0], fx.views[2]};
  EXPECT_EQ(ChooseWith("predicted-ttft", ac), 0u);
  // An empty cache: replicating the prefix there evicts nothing, and decode relief pays.
  ac[1].index_fill = 0;
  EXPECT_EQ(ChooseWith("predicted-ttft", ac), 1u);
}

// StrategyOptions::weights ablates a term: without the decode term (weight 0) the warm
// replica with the lowest predicted TTFT wins, its decoding load no longer charged.
TEST(Strategy, PredictedTtftTermWeightsAblateTheDecodeTerm) {
  Fixture fx(2);
  for (auto& v : fx.views) {
    v.output_tokens = 256;
    v.itl_delta_s = 0.002;
    v.matched_tokens = 16000;
  }
  fx.views[0].predicted_ttft_s = 0.3;
  fx.views[0].decode_seqs = 20;
  fx.views[0].itl_s = 0.080;
  fx.views[1].predicted_ttft_s = 0.5;
  fx.views[1].queue_wait_s = 0.2;
  fx.views[1].decode_seqs = 2;
  fx.views[1].itl_s = 0.045;
  auto f = FindStrategy("predicted-ttft");
  ASSERT_TRUE(f.has_value());
  std::vector<double> scores(2);
  EXPECT_EQ((*f)(StrategyOptions{})->Choose({}, fx.views, scores, 0), 1u);
  StrategyOptions ablated;
  ablated.weights["decode"] = 0;
  EXPECT_EQ((*f)(ablated)->Choose({}, fx.views, scores, 0), 0u);
  EXPECT_DOUBLE_EQ(scores[0], 0.3);
}

// One 32,000-token prefix on every request: a is warm with 4 decoding; b holds the prefix
// in the index but is still prefilling it for the first time (7 s of queue). The
// endpoint's fixed cost per request (the predictor's t0: front end, scheduling) occupies
// no engine step, so it must not count as a prefill stall on a's decoding sequences: a
// fixed cost common to both leaves the choice (a) and the score difference as they were.
// Charged as a stall (4 x 0.4 s), it sent the request behind b's cold prefill.
TEST(Strategy, PredictedTtftChargesNoDecodeStallForTheFixedCost) {
  Fixture fx(2);
  for (auto& v : fx.views) {
    v.output_tokens = 256;
    v.itl_delta_s = 0.004;
    v.matched_tokens = 32000;
    v.uncached_tokens = 256;
  }
  fx.views[0].predicted_ttft_s = 0.15;
  fx.views[0].decode_seqs = 4;
  fx.views[0].itl_s = 0.045;
  fx.views[1].predicted_ttft_s = 7.15;
  fx.views[1].queue_wait_s = 7.0;
  fx.views[1].awaiting_first_token = 1;
  fx.views[1].decode_seqs = 1;
  fx.views[1].itl_s = 0.038;
  std::vector<double> plain, fixed;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &plain), 0u);
  // a: 0.15 + 256 x 0.045 + 4 x 0.004 x 256 + 4 x 0.15 (its prefill stalls theirs).
  EXPECT_NEAR(plain[0], 0.15 + 11.52 + 4.096 + 0.6, 1e-9);
  for (auto& v : fx.views) {
    v.predicted_ttft_s += 0.4;
    v.fixed_cost_s = 0.4;
  }
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &fixed), 0u);
  EXPECT_NEAR(fixed[0] - fixed[1], plain[0] - plain[1], 1e-9);
}

// b is prefilling a new prefix with 3 requests queued there, which will decode next to
// this one: its own decode is charged at the ITL of all of them (itl_s, 4 sequences), not
// as if b were empty, and the warm a with 2 decoding wins over a 2 s queue.
TEST(Strategy, PredictedTtftCountsRequestsQueuedAheadInItsOwnDecode) {
  Fixture fx(2);
  for (auto& v : fx.views) {
    v.output_tokens = 256;
    v.itl_delta_s = 0.004;
    v.matched_tokens = 32000;
    v.uncached_tokens = 256;
  }
  fx.views[0].predicted_ttft_s = 0.15;
  fx.views[0].decode_seqs = 2;
  fx.views[0].itl_s = 0.040;
  fx.views[1].predicted_ttft_s = 2.15;
  fx.views[1].queue_wait_s = 2.0;
  fx.views[1].awaiting_first_token = 3;
  fx.views[1].decode_seqs = 3;
  fx.views[1].itl_s = 0.044;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 0u);
  EXPECT_NEAR(scores[1], 2.15 + 256 * 0.044, 1e-9);
  EXPECT_NEAR(scores[0], 0.15 + 256 * 0.040 + 2 * 0.004 * 256 + 2 * 0.15, 1e-9);
}

// b's hit on the long prefix is still being prefilled by a request dispatched there
// (in_progress_tokens): a request routed to b waits 6 s for that prefill and then decodes
// next to it. b looks cheaper on decoding (one sequence to come, against a's three), and
// without the floor that relief (18.99 - 12.29 s) outweighs the wait (b 18.79 against a
// 19.49); with it b is charged a's decode cost, since a holds the same hit now, and the
// warm a wins.
TEST(Strategy, PredictedTtftDoesNotTradeAWaitOnAPrefillInProgressForDecodeRelief) {
  Fixture fx(2);
  for (auto& v : fx.views) {
    v.output_tokens = 256;
    v.itl_delta_s = 0.005;
    v.matched_tokens = 32000;
    v.uncached_tokens = 256;
    v.fixed_cost_s = 0.4;
  }
  fx.views[0].predicted_ttft_s = 0.5;  // own work 0.1 s
  fx.views[0].decode_seqs = 3;
  fx.views[0].itl_s = 0.058;
  fx.views[1].predicted_ttft_s = 6.5;  // 6 s queued behind the prefix's prefill, own 0.1 s
  fx.views[1].queue_wait_s = 6.0;
  fx.views[1].awaiting_first_token = 1;
  fx.views[1].decode_seqs = 1;
  fx.views[1].itl_s = 0.048;
  fx.views[1].in_progress_tokens = 32000;
  const double decode_a = 256 * 0.058 + 3 * 0.005 * 256 + 3 * 0.1;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 0u);
  EXPECT_NEAR(scores[0], 0.5 + decode_a, 1e-9);
  EXPECT_NEAR(scores[1], 6.5 + decode_a, 1e-9);
  // The same b with its hit cached already (the prefill finished and the 6 s are other
  // requests' work): its decode relief counts, and it wins.
  fx.views[1].in_progress_tokens = 0;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 1u);
  EXPECT_NEAR(scores[1], 6.5 + 256 * 0.048, 1e-9);
}

// No candidate holds the hit yet (b and b2 are prefilling the prefix, c is cold): waiting
// on b is not charged another candidate's decode cost, not even b2's, whose prefill ends
// sooner, so b's lighter decode load wins over b2's 3 s less wait, and both win over c.
TEST(Strategy, PredictedTtftWaitsOnAPrefillInProgressWhenNoReplicaHoldsTheHit) {
  Fixture fx(3);
  for (auto& v : fx.views) {
    v.output_tokens = 256;
    v.itl_delta_s = 0.005;
    v.fixed_cost_s = 0.4;
  }
  fx.views[0].predicted_ttft_s = 6.5;  // b as above
  fx.views[0].queue_wait_s = 6.0;
  fx.views[0].matched_tokens = 32000;
  fx.views[0].uncached_tokens = 256;
  fx.views[0].awaiting_first_token = 1;
  fx.views[0].decode_seqs = 1;
  fx.views[0].itl_s = 0.048;
  fx.views[0].in_progress_tokens = 32000;
  fx.views[1].predicted_ttft_s = 14.0;  // c: the whole prefix to prefill, nothing decoding
  fx.views[1].uncached_tokens = 32256;
  fx.views[1].itl_s = 0.043;
  fx.views[2] = fx.views[0];  // b2: started earlier, 3 s to go, 4 queued there
  fx.views[2].info = &fx.infos[2];
  fx.views[2].predicted_ttft_s = 3.5;
  fx.views[2].queue_wait_s = 3.0;
  fx.views[2].awaiting_first_token = 4;
  fx.views[2].decode_seqs = 4;
  fx.views[2].itl_s = 0.062;
  std::vector<double> scores;
  EXPECT_EQ(ChooseWith("predicted-ttft", fx.views, &scores), 0u);
  EXPECT_NEAR(scores[0], 6.5 + 256 * 0.048, 1e-9);
  EXPECT_NEAR(scores[1], 14.0 + 256 * 0.043, 1e-9);
  EXPECT_NEAR(scores[2], 3.5 + 256 * 0.062, 1e-9);
}

TEST(Strategy, ArgMinBreaksTiesByTieBreakThenRandomly) {
  uint64_t rng = 1;
  std::vector<double> s = {1, 0, 0};
  EXPECT_EQ(ArgMin(s, std::vector<double>{0, 5, 4}, rng), 2u);
  std::set<size_t> seen;
  for (int i = 0; i < 50; ++i) seen.insert(ArgMin(s, {}, rng));
  EXPECT_EQ(seen, (std::set<size_t>{1, 2}));
}

}  // namespace
}  // namespace kinference::routing
