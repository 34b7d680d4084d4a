#include "routing/prefix_index.h"

#include <gtest/gtest.h>

#include "routing/chars_per_token.h"
#include "routing/router.h"

namespace kinference::routing {
namespace {

TEST(ChainedBlockHashes, PrefixPropertyAndPartialBlockDropped) {
  std::string a(1000, 'x');
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>('a' + i % 23);
  std::string b = a.substr(0, 600) + std::string(400, 'z');
  auto ha = ChainedBlockHashes(a, 128);
  auto hb = ChainedBlockHashes(b, 128);
  ASSERT_EQ(ha.size(), 7u);  // 1000 / 128, partial block dropped
  ASSERT_EQ(hb.size(), 7u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ha[i], hb[i]) << i;  // blocks 0..3 (512 chars) shared
  for (int i = 4; i < 7; ++i) EXPECT_NE(ha[i], hb[i]) << i;
  // A change early in the text changes every later hash (chaining).
  std::string c = a;
  c[5] = '#';
  auto hc = ChainedBlockHashes(c, 128);
  for (size_t i = 0; i < hc.size(); ++i) EXPECT_NE(ha[i], hc[i]);
  EXPECT_TRUE(ChainedBlockHashes("short", 128).empty());
  EXPECT_EQ(ChainedBlockHashes(a.substr(0, 256), 128),
            std::vector<uint64_t>(ha.begin(), ha.begin() + 2));
}

TEST(PrefixIndex, MatchIsLongestPresentPrefix) {
  PrefixIndex idx(100);
  std::vector<uint64_t> chain = {1, 2, 3, 4, 5};
  EXPECT_EQ(idx.Match(chain), 0u);
  idx.Insert(std::vector<uint64_t>{1, 2, 3});
  EXPECT_EQ(idx.Match(chain), 3u);
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{1, 2}), 2u);
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{9, 10, 11}), 0u);
  idx.Insert(chain);
  EXPECT_EQ(idx.Match(chain), 5u);
  EXPECT_EQ(idx.size(), 5u);
}

TEST(PrefixIndex, LruBoundEvictsChainTailsFirst) {
  PrefixIndex idx(6);
  idx.Insert(std::vector<uint64_t>{1, 2, 3, 4});
  idx.Insert(std::vector<uint64_t>{10, 11, 12, 13});  // evicts 4 and 3 (least recent)
  EXPECT_EQ(idx.size(), 6u);
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{1, 2, 3, 4}), 2u);
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{10, 11, 12, 13}), 4u);
  idx.Insert(std::vector<uint64_t>{1, 2});  // touch: now 13,12 are least recent
  idx.Insert(std::vector<uint64_t>{20, 21});
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{10, 11, 12, 13}), 2u);
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{1, 2}), 2u);
  idx.SetCapacity(2);
  EXPECT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{20, 21}), 2u);
}

TEST(PrefixIndex, TrimForgetsChainBeyondKept) {
  PrefixIndex idx(100);
  std::vector<uint64_t> chain = {1, 2, 3, 4, 5, 6};
  idx.Insert(chain);
  idx.Trim(chain, 2);
  EXPECT_EQ(idx.Match(chain), 2u);
  EXPECT_EQ(idx.size(), 2u);
  idx.Clear();
  EXPECT_EQ(idx.Match(chain), 0u);
}

TEST(CharsPerToken, StartsAtPriorAndLearns) {
  CharsPerToken r;
  EXPECT_DOUBLE_EQ(r.Ratio(), 4.0);
  EXPECT_DOUBLE_EQ(r.ToTokens(400), 100);
  for (int i = 0; i < 200; ++i) r.Observe(3000, 1000);  // 3 chars/token
  EXPECT_NEAR(r.Ratio(), 3.0, 0.02);
  r.Observe(0, 10);  // ignored
  r.Observe(10, 0);  // ignored
  EXPECT_NEAR(r.Ratio(), 3.0, 0.02);
}

}  // namespace
}  // namespace kinference::routing
