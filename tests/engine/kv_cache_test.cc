#include "engine/kv_cache.h"

#include <gtest/gtest.h>

namespace kinference::engine {
namespace {

TEST(ChainedBlockHash, DependsOnParentAndTokens) {
  std::vector<TokenId> a(16, 1), b(16, 2);
  BlockHash ha = ChainedBlockHash(nullptr, a);
  EXPECT_EQ(ha.key, ChainedBlockHash(nullptr, a).key);
  EXPECT_NE(ha.key, ChainedBlockHash(nullptr, b).key);
  EXPECT_NE(ChainedBlockHash(&ha, b).key, ChainedBlockHash(nullptr, b).key);
}

TEST(ChainedBlockHash, IsVllmsSha256Chain) {
  // The key vLLM 0.32 publishes for these tokens in blocks of 4 (tests/kv/block_hash_test.cc).
  std::vector<TokenId> t = {1, 255, 256, 65535, 65536, 151643, 7, 0};
  BlockHash h0 = ChainedBlockHash(nullptr, std::span(t).first(4));
  EXPECT_EQ(h0.key, 1991969128899042097ULL);
  EXPECT_EQ(ChainedBlockHash(&h0, std::span(t).subspan(4)).key, 7598616187730340881ULL);
}

TEST(BlockPool, AllocatesLeastRecentlyFreedFirstAndEvictsCachedBlocks) {
  BlockPool pool(4, 16);
  std::vector<int> a, b;
  ASSERT_TRUE(pool.Allocate(2, a));  // blocks 0,1
  EXPECT_EQ(a, (std::vector<int>{0, 1}));
  EXPECT_TRUE(pool.Cache(a[0], 100, std::nullopt));
  EXPECT_TRUE(pool.Cache(a[1], 101, 100));
  EXPECT_DOUBLE_EQ(pool.Usage(), 0.5);
  // Freed in reverse: 1 then 0 join the tail behind the never-used 2, 3.
  pool.Free(std::vector<int>{a[1], a[0]});
  EXPECT_EQ(pool.num_free_blocks(), 4);
  EXPECT_EQ(pool.Lookup(101), std::optional<int>(1));
  pool.TakeEvents();
  ASSERT_TRUE(pool.Allocate(3, b));
  EXPECT_EQ(b, (std::vector<int>{2, 3, 1}));
  auto ev = pool.TakeEvents();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_FALSE(ev[0].stored);
  EXPECT_EQ(ev[0].hash, 101u);
  EXPECT_FALSE(pool.Lookup(101).has_value());
  EXPECT_EQ(pool.Lookup(100), std::optional<int>(0));  // still cached, still free
}

TEST(BlockPool, TouchTakesCachedBlockOutOfFreeQueue) {
  BlockPool pool(2, 16);
  std::vector<int> a;
  ASSERT_TRUE(pool.Allocate(1, a));
  pool.Cache(a[0], 7, std::nullopt);
  pool.Free(a);
  pool.Touch(a);
  EXPECT_FALSE(pool.IsFree(a[0]));
  EXPECT_EQ(pool.num_free_blocks(), 1);
  std::vector<int> b;
  EXPECT_FALSE(pool.Allocate(2, b));  // only one free: no change
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool.num_free_blocks(), 1);
  EXPECT_EQ(pool.Lookup(7), std::optional<int>(a[0]));
}

TEST(BlockPool, DuplicateHashIsNotCachedTwice) {
  BlockPool pool(2, 16);
  std::vector<int> a;
  ASSERT_TRUE(pool.Allocate(2, a));
  EXPECT_TRUE(pool.Cache(a[0], 5, std::nullopt));
  EXPECT_FALSE(pool.Cache(a[1], 5, std::nullopt));
  EXPECT_EQ(pool.Lookup(5), std::optional<int>(a[0]));
  EXPECT_EQ(pool.TakeEvents().size(), 1u);
}

}  // namespace
}  // namespace kinference::engine
