#include "engine/block_hash_memo.h"

#include <gtest/gtest.h>

#include <vector>

namespace kinference::engine {
namespace {

std::vector<TokenId> Block(uint32_t seed, int block_size = 16) {
  std::vector<TokenId> out;
  for (int i = 0; i < block_size; ++i) out.push_back(seed * 1000 + static_cast<uint32_t>(i));
  return out;
}

bool Same(const BlockHash& a, const BlockHash& b) { return a.digest == b.digest && a.key == b.key; }

TEST(BlockHashMemoTest, ReturnsChainedBlockHashForChainsAndRepeats) {
  BlockHashMemo memo;
  for (int round = 0; round < 3; ++round) {
    BlockHash parent{};
    for (uint32_t i = 0; i < 50; ++i) {
      const auto tokens = Block(i);
      const BlockHash* p = i == 0 ? nullptr : &parent;
      const BlockHash got = memo.Get(p, tokens);
      ASSERT_TRUE(Same(got, ChainedBlockHash(p, tokens))) << "round " << round << " block " << i;
      parent = got;
    }
  }
  EXPECT_EQ(memo.misses(), 50u);  // the first round computes, the later ones hit
  EXPECT_EQ(memo.hits(), 100u);
}

TEST(BlockHashMemoTest, SameTokensUnderAnotherParentAreAnotherBlock) {
  BlockHashMemo memo;
  const auto a = Block(1), b = Block(2), tail = Block(3);
  const BlockHash pa = memo.Get(nullptr, a), pb = memo.Get(nullptr, b);
  const BlockHash ta = memo.Get(&pa, tail), tb = memo.Get(&pb, tail);
  EXPECT_TRUE(Same(ta, ChainedBlockHash(&pa, tail)));
  EXPECT_TRUE(Same(tb, ChainedBlockHash(&pb, tail)));
  EXPECT_NE(ta.key, tb.key);
  EXPECT_EQ(memo.hits(), 0u);
}

TEST(BlockHashMemoTest, StaysCorrectWhenBlocksOutnumberItsSlots) {
  BlockHashMemo memo;
  const uint32_t n = static_cast<uint32_t>(BlockHashMemo::kSlots) + 5000;
  for (uint32_t i = 0; i < n; ++i) memo.Get(nullptr, Block(i));  // evicts
  for (uint32_t i = 0; i < n; i += 97) {
    const auto tokens = Block(i);
    ASSERT_TRUE(Same(memo.Get(nullptr, tokens), ChainedBlockHash(nullptr, tokens))) << i;
  }
  EXPECT_GT(memo.hits(), 0u);  // the most recent blocks are still there
}

TEST(BlockHashMemoTest, ExtendChainsFullBlocksOntoTheLastHash) {
  // 5 blocks of 16, the 2nd and 4th equal (same tokens, different parents), + 7 tokens.
  std::vector<TokenId> tokens;
  for (uint32_t b : {1u, 2u, 3u, 2u, 4u}) {
    const auto blk = Block(b);
    tokens.insert(tokens.end(), blk.begin(), blk.end());
  }
  tokens.insert(tokens.end(), 7, 99);
  std::vector<BlockHash> expected;
  for (size_t i = 0; i < 5; ++i) {
    expected.push_back(ChainedBlockHash(i == 0 ? nullptr : &expected.back(),
                                        std::span<const TokenId>(tokens).subspan(i * 16, 16)));
  }
  for (int round = 0; round < 2; ++round) {  // computed, then from the memo
    BlockHashMemo memo;
    std::vector<BlockHash> chain;
    if (round == 1) memo.Extend(chain, tokens, 16);
    chain.clear();
    memo.Extend(chain, std::span<const TokenId>(tokens).first(2 * 16 + 5), 16);  // 2 blocks
    ASSERT_EQ(chain.size(), 2u);
    memo.Extend(chain, std::span<const TokenId>(tokens).subspan(2 * 16), 16);  // 3 more
    ASSERT_EQ(chain.size(), 5u);
    for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(Same(chain[i], expected[i])) << round << " " << i;
    if (round == 1) EXPECT_EQ(memo.hits(), 5u);
  }
}

}  // namespace
}  // namespace kinference::engine
