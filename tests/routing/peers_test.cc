// Peer strategies (src/routing/peers) driven through the public Router API.
#include "routing/peers/peers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "routing/peers/peer_util.h"
#include "routing/router.h"
#include "routing/strategy.h"
#include "routing/ttft_predictor.h"

namespace kinference::routing::peers {
namespace {

// Deterministic text of `chars` characters (a multiple of 4); `seed` makes it unique.
std::string Text(uint64_t seed, size_t chars) {
  std::string s;
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (size_t i = 0; i < chars / 4; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    s += ' ';
    for (int k = 0; k < 3; ++k) s += static_cast<char>('a' + ((x >> (20 + 5 * k)) % 26));
  }
  return s;
}

RequestFeatures Req(const std::string& id, const std::string& text) {
  RequestFeatures f;
  f.request_id = id;
  f.model = "m";
  f.block_hashes = ChainedBlockHashes(text, 128);
  f.prompt_chars = text.size();
  return f;
}

class PeersTest : public ::testing::Test {
 protected:
  PeersTest() : router(RouterConfig{}) {
    for (const char* id : {"a", "b", "c"}) router.AddEndpoint({id, "m", "p"}, 0);
  }
  // Picks among `only` (all when empty) with `strategy`.
  Decision Pick(const RequestFeatures& f, const std::string& strategy,
                std::vector<EndpointId> only = {}, Seconds now = 0) {
    auto d = router.Pick(f, only, strategy, now);
    EXPECT_TRUE(d.ok()) << d.status().message();
    return d.ok() ? *d : Decision{};
  }
  // Routes `f` to `ep` with `strategy` (so that strategy's hooks see it) and dispatches.
  void DispatchTo(const EndpointId& ep, const RequestFeatures& f, const std::string& strategy,
                  Seconds now = 0) {
    Decision d = Pick(f, strategy, {ep}, now);
    ASSERT_EQ(d.endpoint, ep);
    router.OnDispatched(f, d, now);
  }
  double Score(const Decision& d, const EndpointId& id) {
    for (const auto& c : d.candidates)
      if (c.endpoint == id) return c.score;
    ADD_FAILURE() << "no candidate " << id;
    return 0;
  }
  void Metrics(const EndpointId& id, double waiting, double kv_usage) {
    MetricsSnapshot m;
    m.num_requests_waiting = waiting;
    m.num_requests_running = 0;
    m.kv_cache_usage_perc = kv_usage;
    router.ObserveMetrics(id, m, 0);
  }
  Router router;
};

TEST(Peers, RegisteredByLinkingTheRoutingLibrary) {
  // No explicit RegisterPeerStrategies() call: the static registrar must have run.
  auto names = RegisteredStrategyNames();
  for (const auto& n : PeerStrategyNames())
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  RegisterPeerStrategies();  // idempotent
  EXPECT_EQ(RegisteredStrategyNames(), names);
}

TEST(Peers, EstimateBlockCharsRecoversTheRouterBlockSize) {
  for (size_t block : {16u, 64u, 128u, 256u})
    for (size_t chars : {block, block + 1, 3 * block - 1, 100 * block + 7}) {
      std::string t(chars, 'x');
      RequestFeatures f;
      f.block_hashes = ChainedBlockHashes(t, block);
      f.prompt_chars = chars;
      EXPECT_EQ(EstimateBlockChars(f), static_cast<double>(block)) << block << " " << chars;
    }
  EXPECT_EQ(EstimateBlockChars(RequestFeatures{}), 128);
}

TEST_F(PeersTest, GieWeighsPrefixQueueAndKvCache) {
  std::string x = Text(1, 4096);  // 32 blocks
  DispatchTo("a", Req("x", x), "gie");
  for (const char* id : {"a", "b", "c"}) Metrics(id, 0, 0);
  auto r = Req("r", x + Text(2, 256));  // 34 blocks, 32 cached on a
  Decision d = Pick(r, "gie");
  EXPECT_EQ(d.endpoint, "a");
  EXPECT_DOUBLE_EQ(Score(d, "a"), -(3.0 * 32 / 34 + 2 + 2));
  EXPECT_DOUBLE_EQ(Score(d, "b"), -4.0);

  // a now has the longest waiting queue (queue score 0), c half of it.
  Metrics("a", 10, 0);
  Metrics("b", 0, 0);
  Metrics("c", 5, 0);
  d = Pick(r, "gie");
  EXPECT_DOUBLE_EQ(Score(d, "a"), -(3.0 * 32 / 34 + 0 + 2));  // 4.82: still best
  EXPECT_DOUBLE_EQ(Score(d, "c"), -(0 + 1 + 2));
  EXPECT_EQ(d.endpoint, "a");
  Metrics("a", 10, 0.9);  // 3 * 0.94 + 0.2 = 3.02 < b's 4
  EXPECT_EQ(Pick(r, "gie").endpoint, "b");
}

TEST_F(PeersTest, GieGivesNoCreditBeyondTheFirst256BlocksOf64Chars) {
  std::string system = Text(3, 16384);  // exactly the 256 x 64-character cap
  std::string doc = Text(4, 8192);
  DispatchTo("a", Req("s", system), "gie");
  DispatchTo("b", Req("sd", system + doc), "gie");
  Metrics("a", 2, 0);
  Metrics("b", 2, 0.1);
  auto r = Req("q", system + doc + Text(5, 512));
  Decision d = Pick(r, "gie", {"a", "b"});
  // Both hold the capped part in full: the document shared only with b earns nothing,
  // so a's emptier KV cache decides (uncapped, b's 192/196 vs a's 128/196 would win).
  EXPECT_EQ(d.endpoint, "a");
  EXPECT_DOUBLE_EQ(Score(d, "a"), -(3 + 2 + 2));
  EXPECT_DOUBLE_EQ(Score(d, "b"), -(3 + 2 + 2 * 0.9));
  // The router's own index has no cap: `prefix` sees b's longer match.
  EXPECT_EQ(Pick(r, "prefix", {"a", "b"}).endpoint, "b");
}

TEST_F(PeersTest, SglangFollowsTheCacheAboveThresholdElseTheSmallestTree) {
  std::string x = Text(10, 4096);
  DispatchTo("a", Req("x", x), "sglang");
  DispatchTo("b", Req("y", Text(11, 1024)), "sglang");
  Decision d = Pick(Req("r", x + Text(12, 1024)), "sglang");  // match rate 32/40
  EXPECT_EQ(d.endpoint, "a");
  EXPECT_DOUBLE_EQ(Score(d, "a"), -0.8);
  // 32/128 = 0.25 <= 0.3: the cache is not followed; c holds the smallest tree.
  d = Pick(Req("s", x + Text(13, 12288)), "sglang");
  EXPECT_EQ(d.endpoint, "c");
  EXPECT_EQ(Score(d, "a"), 32);
  EXPECT_EQ(Score(d, "b"), 8);
  EXPECT_EQ(Score(d, "c"), 0);
}

TEST_F(PeersTest, SglangSwitchesToShortestQueueWhenImbalanced) {
  std::string x = Text(20, 4096);
  auto r = Req("r", x + Text(21, 256));
  DispatchTo("a", Req("x", x), "sglang");
  int n = 1;
  auto fill = [&](const EndpointId& ep, int upto) {
    for (; n < upto; ++n) DispatchTo(ep, Req("f" + std::to_string(n), Text(1000 + n, 128)), "");
  };
  fill("a", 64);  // a: 64 in flight, b: 0; 64 - 0 is not > 64
  EXPECT_EQ(Pick(r, "sglang", {"a", "b"}).endpoint, "a");
  fill("a", 65);  // 65 - 0 > 64 and 65 > 1.5 * 0
  Decision d = Pick(r, "sglang", {"a", "b"});
  EXPECT_EQ(d.endpoint, "b");
  EXPECT_EQ(Score(d, "a"), 65);
  EXPECT_EQ(Score(d, "b"), 0);

  // Relative threshold: a 200 vs b 134 differs by 66 but 200 <= 1.5 * 134 = 201.
  int m = 0;
  for (; m < 134; ++m) DispatchTo("b", Req("g" + std::to_string(m), Text(5000 + m, 128)), "");
  fill("a", 200);
  EXPECT_EQ(Pick(r, "sglang", {"a", "b"}).endpoint, "a");
  fill("a", 202);  // 202 > 201
  EXPECT_EQ(Pick(r, "sglang", {"a", "b"}).endpoint, "b");
}

TEST_F(PeersTest, DynamoCostOrdersPrefillAgainstActiveBlocks) {
  std::string x = Text(30, 1280);  // 10 blocks
  DispatchTo("a", Req("x", x), "dynamo");
  router.OnFinished("x", Usage{320, 0, 10}, Outcome::kSuccess, 1);  // cached, not active
  DispatchTo("c", Req("busy", Text(31, 2560)), "dynamo");           // 20 blocks active
  auto r = Req("r", x + Text(32, 256));                             // 12 blocks + tail
  Decision d = Pick(r, "dynamo", {}, 2);
  // cost = 1 * (13 - overlap) + (active + 13)
  EXPECT_DOUBLE_EQ(Score(d, "a"), 3 + 13);
  EXPECT_DOUBLE_EQ(Score(d, "b"), 13 + 13);
  EXPECT_DOUBLE_EQ(Score(d, "c"), 13 + 21 + 13);
  EXPECT_EQ(d.endpoint, "a");

  // Active blocks shared with the request count once: a sequence on b holding x.
  DispatchTo("b", Req("x2", x + Text(33, 128)), "dynamo", 2);
  d = Pick(r, "dynamo", {}, 2);
  EXPECT_DOUBLE_EQ(Score(d, "b"), 3 + (11 + 1) + (13 - 10));

  // Decode load outweighs the cache: 30 active blocks on a.
  router.OnFinished("x2", Usage{}, Outcome::kSuccess, 2);
  DispatchTo("a", Req("long", Text(34, 3712)), "dynamo", 2);  // 29 blocks + tail
  d = Pick(r, "dynamo", {}, 2);
  EXPECT_DOUBLE_EQ(Score(d, "a"), 3 + 30 + 13);
  EXPECT_DOUBLE_EQ(Score(d, "b"), 3 + 13);  // b now holds x too, nothing active
  EXPECT_EQ(d.endpoint, "b");

  // Predicted cache entries expire 120 s after they were last sent.
  d = Pick(r, "dynamo", {}, 200);
  EXPECT_DOUBLE_EQ(Score(d, "b"), 13 + 13);
}

// A restarted replica's cache is empty and a removed one's state must not outlive it:
// gie's and sglang's per-endpoint indexes and dynamo's cached blocks forget it
// (Strategy::OnEndpointReset / OnEndpointRemoved), while dynamo's active blocks stay until
// their requests finish.
TEST_F(PeersTest, PeersForgetAResetOrRemovedEndpointsCache) {
  const std::string x = Text(40, 4096);
  const auto r = Req("r", x + Text(41, 256));
  for (const std::string s : {"gie", "sglang", "dynamo"}) {
    for (bool remove : {false, true}) {
      router.AddEndpoint({"a", "m", "p"}, 0);
      for (const char* id : {"a", "b", "c"}) Metrics(id, 0, 0);
      const std::string id = s + (remove ? "-removed" : "-reset");
      DispatchTo("a", Req(id, x), s);
      router.OnFinished(id, Usage{1024, 0, 1}, Outcome::kSuccess, 1);
      Decision warm = Pick(r, s, {"a", "b"}, 1);
      EXPECT_LT(Score(warm, "a"), Score(warm, "b")) << id;
      if (remove) {
        router.RemoveEndpoint("a");
        router.AddEndpoint({"a", "m", "p"}, 1);
        Metrics("a", 0, 0);
      } else {
        router.ResetEndpoint("a");
      }
      Decision cold = Pick(r, s, {"a", "b"}, 1);
      EXPECT_DOUBLE_EQ(Score(cold, "a"), Score(cold, "b")) << id;
      router.ResetEndpoint("b");
      router.ResetEndpoint("c");
    }
  }
}

TEST_F(PeersTest, MooncakeTradesQueuedPrefillAgainstCacheHits) {
  std::string x = Text(40, 8000);  // 2000 tokens at the prior 4 chars/token
  DispatchTo("a", Req("x", x), "mooncake");
  router.OnFirstToken("x", 0);
  auto r = Req("r", x + Text(41, 400));
  EXPECT_EQ(Pick(r, "mooncake", {"a", "b"}).endpoint, "a");  // cache hit, no queue

  // 2400 tokens awaiting their first token on a: more than the hit saves.
  DispatchTo("a", Req("q1", Text(42, 9600)), "mooncake");
  Decision d = Pick(r, "mooncake", {"a", "b"});
  EXPECT_EQ(d.endpoint, "b");
  EXPECT_GT(Score(d, "a"), Score(d, "b"));
  EXPECT_NEAR(Score(d, "b"), 2100 / 4000.0, 0.02);
}

TEST_F(PeersTest, LlmdStickyStaysWarmUntilThePenaltyThenSwitches) {
  std::string x = Text(50, 8000);  // 2000 tokens
  DispatchTo("a", Req("x", x), "llmd-sticky");
  // Its first token when the prior says (speed and shape stay the prior's).
  router.OnFirstToken("x", 0.05 + TtftPredictor::PriorWork({0, 2000, 0, 0}));
  auto r = Req("r", x + Text(51, 400));
  EXPECT_EQ(Pick(r, "llmd-sticky", {"a", "b"}).endpoint, "a");

  // 3200 queued tokens on a: a's estimate (~0.87 s) exceeds b's (~0.53 s), by less than
  // the 0.5 s penalty. Mooncake already leaves; sticky stays. The queued request holds
  // the queue for its prior-shaped prefill including attention: 0.25 s * 3.2 * (3200 / 2)
  // / 32768 = 0.039 s beyond its 3200 tokens at 4000 tokens/s.
  DispatchTo("a", Req("q1", Text(52, 12800)), "llmd-sticky");
  EXPECT_EQ(Pick(r, "mooncake", {"a", "b"}).endpoint, "b");
  Decision d = Pick(r, "llmd-sticky", {"a", "b"});
  EXPECT_EQ(d.endpoint, "a");
  EXPECT_NEAR(Score(d, "a"), (3200 + 116) / 4000.0 + 0.039 - 0.5, 0.01);

  // 4800 queued tokens: more than the penalty behind, so it switches.
  DispatchTo("a", Req("q2", Text(53, 6400)), "llmd-sticky");
  EXPECT_EQ(Pick(r, "llmd-sticky", {"a", "b"}).endpoint, "b");

  // Without a warm endpoint it is the lowest estimate.
  EXPECT_EQ(Pick(Req("cold", Text(54, 400)), "llmd-sticky", {"a", "b"}).endpoint, "b");
}

}  // namespace
}  // namespace kinference::routing::peers
