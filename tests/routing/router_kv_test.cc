// The router's precise (KV-event) index: matching, fallback to the approximate index.
#include <gtest/gtest.h>

#include "routing/router.h"

namespace kinference::routing {
namespace {

constexpr int kBlock = 16;

kv::EventBatch StoredBatch(std::vector<uint64_t> keys) {
  kv::BlockStored s;
  s.token_ids.assign(keys.size() * kBlock, 7);
  s.block_hashes = std::move(keys);
  s.block_size = kBlock;
  s.medium = "GPU";
  kv::EventBatch b;
  b.events.push_back(std::move(s));
  return b;
}

RequestFeatures Req(std::vector<uint64_t> keys, int prompt_tokens) {
  RequestFeatures f;
  f.request_id = "r";
  f.model = "m";
  f.prompt_chars = static_cast<size_t>(prompt_tokens) * 4;
  f.engine_block_keys = std::move(keys);
  f.engine_block_size = kBlock;
  f.prompt_tokens = prompt_tokens;
  return f;
}

const CandidateScore& Cand(const Decision& d, const EndpointId& id) {
  for (const auto& c : d.candidates)
    if (c.endpoint == id) return c;
  static CandidateScore none;
  ADD_FAILURE() << "no candidate " << id;
  return none;
}

class RouterKvTest : public ::testing::Test {
 protected:
  RouterKvTest() : router(RouterConfig{}) {
    router.AddEndpoint({"a", "m", "p"}, 0);
    router.AddEndpoint({"b", "m", "p"}, 0);
  }
  Decision Pick(const RequestFeatures& f, std::string_view strategy = "prefix") {
    auto d = router.Pick(f, {}, strategy, 1.0);
    EXPECT_TRUE(d.ok()) << d.status().message();
    return d.ok() ? *d : Decision{};
  }
  Router router;
};

TEST_F(RouterKvTest, LiveFeedGivesExactTokenMatchAndPicksTheHolder) {
  router.SetKvEventsLive("a", true);
  router.SetKvEventsLive("b", true);
  router.OnKvEvents("b", StoredBatch({11, 12, 13}));
  Decision d = Pick(Req({11, 12, 13, 14}, 4 * kBlock + 5));
  EXPECT_EQ(d.endpoint, "b");
  EXPECT_TRUE(d.precise);
  EXPECT_DOUBLE_EQ(d.matched_tokens, 3 * kBlock);
  EXPECT_DOUBLE_EQ(Cand(d, "a").matched_tokens, 0);
  auto stats = router.KvIndex("b");
  ASSERT_TRUE(stats);
  EXPECT_TRUE(stats->live);
  EXPECT_EQ(stats->blocks, 3u);
  EXPECT_EQ(stats->block_size, kBlock);
}

TEST_F(RouterKvTest, HitLeavesTheLastPromptTokenToCompute) {
  router.SetKvEventsLive("a", true);
  router.OnKvEvents("a", StoredBatch({1, 2}));
  // 32 tokens, both blocks cached: vLLM still computes the last token, so 1 block hits.
  Decision d = Pick(Req({1, 2}, 2 * kBlock));
  EXPECT_DOUBLE_EQ(Cand(d, "a").matched_tokens, kBlock);
}

TEST_F(RouterKvTest, EvictionSeenThroughEventsEndsTheMatch) {
  router.SetKvEventsLive("a", true);
  router.OnKvEvents("a", StoredBatch({1, 2, 3}));
  kv::EventBatch removed;
  removed.events.push_back(kv::BlockRemoved{{2}, "GPU", std::nullopt});
  router.OnKvEvents("a", removed);
  EXPECT_DOUBLE_EQ(Cand(Pick(Req({1, 2, 3}, 100)), "a").matched_tokens, kBlock);
  router.ClearKvEvents("a");
  EXPECT_DOUBLE_EQ(Cand(Pick(Req({1, 2, 3}, 100)), "a").matched_tokens, 0);
  EXPECT_EQ(router.KvIndex("a")->clears, 1u);
}

TEST_F(RouterKvTest, DeadFeedFallsBackToTheApproximateIndex) {
  // The approximate index learns from dispatches; the precise one from events.
  RequestFeatures f = Req({1, 2, 3}, 3 * kBlock + 1);
  f.block_hashes = ChainedBlockHashes(std::string(400, 'x'), 128);
  EndpointId only_a[] = {"a"};
  auto d0 = router.Pick(f, only_a, "prefix", 0);
  ASSERT_TRUE(d0.ok());
  router.OnDispatched(f, *d0, 0);
  router.OnFinished("r", Usage{3 * kBlock + 1, 0, 1}, Outcome::kSuccess, 0.5);

  router.SetKvEventsLive("a", true);  // live but empty: the engine holds nothing
  Decision live = Pick(f);
  EXPECT_TRUE(Cand(live, "a").precise);
  EXPECT_DOUBLE_EQ(Cand(live, "a").matched_tokens, 0);

  router.SetKvEventsLive("a", false);  // publisher dead: back to the belief
  Decision dead = Pick(f);
  EXPECT_FALSE(Cand(dead, "a").precise);
  EXPECT_GT(Cand(dead, "a").matched_tokens, 0);
}

TEST_F(RouterKvTest, RequestsWithoutTokensOrWithAnotherBlockSizeUseTheApproximateIndex) {
  router.SetKvEventsLive("a", true);
  router.OnKvEvents("a", StoredBatch({1, 2}));
  RequestFeatures no_tokens = Req({}, 0);
  EXPECT_FALSE(Cand(Pick(no_tokens), "a").precise);
  RequestFeatures other = Req({1, 2}, 100);
  other.engine_block_size = 32;
  EXPECT_FALSE(Cand(Pick(other), "a").precise);
}

TEST_F(RouterKvTest, MetricsRestartClearsThePreciseIndexToo) {
  router.SetKvEventsLive("a", true);
  router.OnKvEvents("a", StoredBatch({1, 2}));
  MetricsSnapshot s;
  s.prompt_tokens_total = 100;
  router.ObserveMetrics("a", s, 1);
  s.prompt_tokens_total = 5;  // counters went back: restarted
  router.ObserveMetrics("a", s, 2);
  EXPECT_EQ(router.KvIndex("a")->blocks, 0u);
}

}  // namespace
}  // namespace kinference::routing
