#include "routing/prefix_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <random>
#include <unordered_map>

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

// The LRU semantics of the std::list + std::unordered_map implementation the flat table
// replaced, as a reference.
class ReferenceIndex {
 public:
  explicit ReferenceIndex(size_t capacity) : capacity_(capacity) {}
  bool Contains(uint64_t h) const { return map_.count(h) != 0; }
  void Insert(const std::vector<uint64_t>& chain) {
    for (size_t k = chain.size(); k-- > 0;) {
      auto it = map_.find(chain[k]);
      if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
      } else {
        lru_.push_front(chain[k]);
        map_.emplace(chain[k], lru_.begin());
      }
    }
    Evict();
  }
  void Trim(const std::vector<uint64_t>& chain, size_t keep) {
    for (size_t k = keep; k < chain.size(); ++k) {
      auto it = map_.find(chain[k]);
      if (it == map_.end()) continue;
      lru_.erase(it->second);
      map_.erase(it);
    }
  }
  void SetCapacity(size_t c) {
    capacity_ = std::max<size_t>(1, c);
    Evict();
  }
  size_t size() const { return map_.size(); }

 private:
  void Evict() {
    while (map_.size() > capacity_) {
      map_.erase(lru_.back());
      lru_.pop_back();
    }
  }
  size_t capacity_;
  std::list<uint64_t> lru_;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> map_;
};

TEST(PrefixIndex, BehavesAsTheListAndMapLruUnderRandomOperations) {
  std::mt19937_64 rng(3);
  // Chains share prefixes (a few roots, branching), as prompts do; hashes collide in the
  // table's low bits often enough to exercise probing and backward-shift deletion.
  std::vector<std::vector<uint64_t>> chains;
  for (int c = 0; c < 60; ++c) {
    std::vector<uint64_t> chain;
    const size_t len = 1 + rng() % 40;
    const size_t shared = c > 0 && rng() % 2 ? rng() % chains[c - 1].size() : 0;
    for (size_t i = 0; i < len; ++i)
      chain.push_back(i < shared ? chains[c - 1][i] : (rng() % 4096) << 20 | (rng() % 7));
    chains.push_back(std::move(chain));
  }
  PrefixIndex idx(150);
  ReferenceIndex ref(150);
  for (int step = 0; step < 20000; ++step) {
    const auto& chain = chains[rng() % chains.size()];
    const uint64_t op = rng() % 20;
    if (op < 2) {
      const size_t keep = rng() % (chain.size() + 1);
      idx.Trim(chain, keep);
      ref.Trim(chain, keep);
    } else if (op == 2) {
      const size_t capacity = 20 + rng() % 300;
      idx.SetCapacity(capacity);
      ref.SetCapacity(capacity);
    } else {
      idx.Insert(chain);
      ref.Insert(chain);
    }
    ASSERT_EQ(idx.size(), ref.size()) << "step " << step;
    for (const auto& c : {chain, chains[rng() % chains.size()]})
      for (uint64_t h : c) ASSERT_EQ(idx.Contains(h), ref.Contains(h)) << "step " << step;
  }
  idx.Clear();
  EXPECT_EQ(idx.size(), 0u);
  EXPECT_EQ(idx.Match(chains[0]), 0u);
  idx.Insert(chains[0]);  // usable after Clear
  EXPECT_EQ(idx.Match(chains[0]), chains[0].size());
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
