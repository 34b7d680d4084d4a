// Scheduling behaviour of the engine model: prefix caching, eviction order, preemption
// and the per-step token budget. Virtual time only.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/kv_cache.h"
#include "engine_test_util.h"

namespace kinference::engine {
namespace {

using testing::Req;
using testing::RunToIdle;
using testing::TinyProfile;
using testing::Tokens;

std::vector<TokenId> Concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<TokenId> Prefix(const std::vector<TokenId>& a, size_t n) {
  return std::vector<TokenId>(a.begin(), a.begin() + n);
}

TEST(PrefixCache, SecondRequestHitsSharedFullBlocks) {
  Engine e(TinyProfile(100));
  auto a = Tokens(1, 100);
  ASSERT_TRUE(e.AddRequest(Req("a", a, 4)).ok());
  auto log = RunToIdle(e, 0);
  EXPECT_EQ(log.finished.at("a").cached_tokens, 0);
  // 83 shared tokens = 5 full blocks (80 tokens) + 3 tokens of a partial block.
  ASSERT_TRUE(e.AddRequest(Req("b", Concat(Prefix(a, 83), Tokens(2, 40)), 4, log.end)).ok());
  auto log2 = RunToIdle(e, log.end);
  EXPECT_EQ(log2.finished.at("b").cached_tokens, 80);
  EXPECT_EQ(e.metrics().prefix_cache_queries_total, 100u + 123u);
  EXPECT_EQ(e.metrics().prefix_cache_hits_total, 80u);
}

TEST(PrefixCache, HitIsCappedSoThatOneTokenIsComputed) {
  Engine e(TinyProfile(100));
  auto a = Tokens(1, 64);  // exactly 4 full blocks
  ASSERT_TRUE(e.AddRequest(Req("a", a, 1)).ok());
  auto log = RunToIdle(e, 0);
  ASSERT_TRUE(e.AddRequest(Req("again", a, 1, log.end)).ok());
  auto log2 = RunToIdle(e, log.end);
  EXPECT_EQ(log2.finished.at("again").cached_tokens, 48);
}

TEST(PrefixCache, OutputTokensAreCachedForTheNextTurn) {
  Engine e(TinyProfile(100));
  auto prompt = Tokens(3, 32);
  ASSERT_TRUE(e.AddRequest(Req("turn1", prompt, 40)).ok());
  auto log = RunToIdle(e, 0);
  ASSERT_EQ(log.tokens.at("turn1").size(), 40u);
  // The output text re-tokenizes to the same ids.
  std::string text;
  std::vector<TokenId> ids;
  for (const auto& t : log.tokens.at("turn1")) {
    text += t.text;
    ids.push_back(t.token);
  }
  EXPECT_EQ(Tokenize(text), ids);
  // 32 prompt + 39 computed output tokens = 71 computed => 4 full blocks cached.
  auto turn2 = Concat(Concat(prompt, ids), Tokens(4, 10));
  ASSERT_TRUE(e.AddRequest(Req("turn2", turn2, 1, log.end)).ok());
  auto log2 = RunToIdle(e, log.end);
  EXPECT_EQ(log2.finished.at("turn2").cached_tokens, 64);
}

TEST(Eviction, FinishedRequestTailBlocksGoFirst) {
  Engine e(TinyProfile(10));
  auto a = Tokens(1, 64);
  ASSERT_TRUE(e.AddRequest(Req("a", a, 1)).ok());
  auto log = RunToIdle(e, 0);
  // b needs 7 blocks: the 6 never-used ones and then a's last block.
  ASSERT_TRUE(e.AddRequest(Req("b", Tokens(2, 112), 1, log.end)).ok());
  auto log2 = RunToIdle(e, log.end);
  std::vector<uint64_t> removed;
  for (const auto& s : log2.steps) {
    for (const auto& ev : s.kv_events) {
      if (const auto* r = std::get_if<kv::BlockRemoved>(&ev))
        removed.push_back(r->block_hashes.at(0));
    }
  }
  BlockHash h;
  for (int i = 0; i < 4; ++i)
    h = ChainedBlockHash(i ? &h : nullptr, std::span<const TokenId>(a.data() + 16 * i, 16));
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], h.key);  // a's 4th (tail) block
  ASSERT_TRUE(e.AddRequest(Req("a2", a, 1, log2.end)).ok());
  EXPECT_EQ(RunToIdle(e, log2.end).finished.at("a2").cached_tokens, 48);
}

TEST(KvEvents, BlockStoredChainsParentHashes) {
  Engine e(TinyProfile(100));
  auto a = Tokens(1, 50);  // 3 full blocks
  ASSERT_TRUE(e.AddRequest(Req("a", a, 1)).ok());
  auto log = RunToIdle(e, 0);
  std::vector<kv::BlockStored> stored;
  for (const auto& s : log.steps) {
    for (const auto& ev : s.kv_events) {
      if (const auto* b = std::get_if<kv::BlockStored>(&ev)) stored.push_back(*b);
    }
  }
  // One event for the run of 3 blocks the prompt filled, as vLLM's cache_full_blocks.
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_FALSE(stored[0].parent_block_hash.has_value());
  EXPECT_EQ(stored[0].block_size, 16);
  EXPECT_EQ(stored[0].medium, std::optional<std::string>("GPU"));
  EXPECT_EQ(stored[0].token_ids, std::vector<TokenId>(a.begin(), a.begin() + 48));
  BlockHash h;
  std::vector<uint64_t> keys;
  for (int i = 0; i < 3; ++i) {
    h = ChainedBlockHash(i ? &h : nullptr, std::span<const TokenId>(a.data() + 16 * i, 16));
    keys.push_back(h.key);
  }
  EXPECT_EQ(stored[0].block_hashes, keys);
  // The router computes the same keys from the tokens alone.
  EXPECT_EQ(kv::BlockHasher().BlockKeys(a, 16), keys);
}

// Blocks hashed before (the engine remembers recent block hashes) chain exactly as fresh
// ones: a block of equal tokens under another parent gets another key.
TEST(KvEvents, RepeatedAndReparentedBlocksHashAsVllmDoes) {
  Engine e(TinyProfile(100));
  auto block = Tokens(7, 16);
  auto a = Concat(Concat(Tokens(1, 16), block), Tokens(2, 16));  // x, block, y
  auto b = Concat(Concat(Tokens(3, 16), block), Tokens(2, 16));  // z, block, y
  ASSERT_TRUE(e.AddRequest(Req("a", Concat(a, Tokens(4, 5)), 1)).ok());
  auto log = RunToIdle(e, 0);
  ASSERT_TRUE(e.AddRequest(Req("b", Concat(b, Tokens(5, 5)), 1, log.end)).ok());
  ASSERT_TRUE(e.AddRequest(Req("a2", Concat(a, Tokens(6, 5)), 1, log.end)).ok());
  auto log2 = RunToIdle(e, log.end);
  EXPECT_EQ(log2.finished.at("a2").cached_tokens, 48);
  EXPECT_EQ(log2.finished.at("b").cached_tokens, 0);
  std::vector<uint64_t> stored;
  for (const auto* l : {&log, &log2})
    for (const auto& s : l->steps)
      for (const auto& ev : s.kv_events)
        if (const auto* st = std::get_if<kv::BlockStored>(&ev))
          stored.insert(stored.end(), st->block_hashes.begin(), st->block_hashes.end());
  std::vector<uint64_t> expected = kv::BlockHasher().BlockKeys(a, 16);
  for (uint64_t k : kv::BlockHasher().BlockKeys(b, 16)) expected.push_back(k);
  EXPECT_EQ(stored, expected);
  EXPECT_NE(expected[1], expected[4]);  // the same tokens under x and under z
}

TEST(Eviction, LeastRecentlyFreedRequestIsEvictedFirst) {
  Engine e(TinyProfile(10));
  auto a = Tokens(1, 64), b = Tokens(2, 64);
  ASSERT_TRUE(e.AddRequest(Req("a", a, 1)).ok());
  Seconds t = RunToIdle(e, 0).end;
  ASSERT_TRUE(e.AddRequest(Req("b", b, 1, t)).ok());
  t = RunToIdle(e, t).end;
  // 6 blocks: the 2 never-used ones, then all 4 of a's; none of b's.
  ASSERT_TRUE(e.AddRequest(Req("c", Tokens(3, 96), 1, t)).ok());
  t = RunToIdle(e, t).end;
  // Query b first: a2's allocation would otherwise reuse b's free blocks.
  ASSERT_TRUE(e.AddRequest(Req("b2", b, 1, t)).ok());
  auto log = RunToIdle(e, t);
  EXPECT_EQ(log.finished.at("b2").cached_tokens, 48);
  ASSERT_TRUE(e.AddRequest(Req("a2", a, 1, log.end)).ok());
  EXPECT_EQ(RunToIdle(e, log.end).finished.at("a2").cached_tokens, 0);
}

TEST(Preemption, LastScheduledRequestIsPreemptedWhenBlocksRunOut) {
  Engine e(TinyProfile(6));
  ASSERT_TRUE(e.AddRequest(Req("r1", Tokens(1, 30), 40)).ok());
  ASSERT_TRUE(e.AddRequest(Req("r2", Tokens(2, 30), 40)).ok());
  auto log = RunToIdle(e, 0);
  EXPECT_GE(e.metrics().num_preemptions_total, 1u);
  ASSERT_EQ(log.finished.size(), 2u);
  EXPECT_EQ(log.finished.at("r1").preemptions, 0);
  EXPECT_GE(log.finished.at("r2").preemptions, 1);
  for (const char* id : {"r1", "r2"}) {
    EXPECT_EQ(log.finished.at(id).reason, FinishReason::kLength);
    EXPECT_EQ(log.finished.at(id).completion_tokens, 40);
    const auto& toks = log.tokens.at(id);
    ASSERT_EQ(toks.size(), 40u);  // recompute does not re-emit tokens
    for (int i = 0; i < 40; ++i) EXPECT_EQ(toks[i].index, i);
  }
  EXPECT_DOUBLE_EQ(e.metrics().kv_cache_usage_perc, 0.0);
}

TEST(StepBudget, ChunkedPrefillTakesCeilOfPromptOverBudgetSteps) {
  Engine e(TinyProfile(1000));
  ASSERT_TRUE(e.AddRequest(Req("long", Tokens(1, 5000), 2)).ok());
  auto log = RunToIdle(e, 0);
  ASSERT_EQ(log.steps.size(), 4u);  // 3 prefill steps (2048+2048+904) + 1 decode
  EXPECT_EQ(log.steps[0].scheduled_prefill_tokens, 2048);
  EXPECT_EQ(log.steps[1].scheduled_prefill_tokens, 2048);
  EXPECT_EQ(log.steps[2].scheduled_prefill_tokens, 904);
  EXPECT_TRUE(log.steps[1].tokens.empty());
  ASSERT_EQ(log.steps[2].tokens.size(), 1u);  // first token when the prefill completes
  EXPECT_EQ(log.steps[3].scheduled_decode_seqs, 1);
}

TEST(StepBudget, NoStepExceedsTheTokenBudget) {
  Engine e(TinyProfile(2000));
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(
        e.AddRequest(Req("r" + std::to_string(i), Tokens(100 + i, 700), 20, 0.01 * i)).ok());
  }
  auto log = RunToIdle(e, 0);
  EXPECT_EQ(log.finished.size(), 30u);
  bool mixed = false;
  for (const auto& s : log.steps) {
    EXPECT_LE(s.scheduled_prefill_tokens + s.scheduled_decode_seqs, 2048);
    mixed |= s.scheduled_prefill_tokens > 0 && s.scheduled_decode_seqs > 0;
  }
  EXPECT_TRUE(mixed);  // decodes and prefill chunks share steps (continuous batching)
}

TEST(StepBudget, MaxNumSeqsCapsRunningRequests) {
  auto p = TinyProfile(1000);
  p.max_num_seqs = 3;
  Engine e(p);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(e.AddRequest(Req("r" + std::to_string(i), Tokens(i, 20), 5)).ok());
  }
  ASSERT_TRUE(e.PlanStep(0).has_value());
  EXPECT_EQ(e.metrics().num_requests_running, 3);
  EXPECT_EQ(e.metrics().num_requests_waiting, 2);
  e.CompleteStep();
}

}  // namespace
}  // namespace kinference::engine
