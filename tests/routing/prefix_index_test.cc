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

TEST(ChainedBlockHashes, KeyChangesEveryHashAndKeepsThePrefixProperty) {
  std::string a(1000, 'x');
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>('a' + i % 31);
  const std::string b = a.substr(0, 384) + std::string(616, 'q');
  const uint64_t key = 0x5eed5eed12345678ULL;
  auto unkeyed = ChainedBlockHashes(a, 128);
  auto ka = ChainedBlockHashes(a, 128, key);
  auto kb = ChainedBlockHashes(b, 128, key);
  ASSERT_EQ(ka.size(), unkeyed.size());
  for (size_t i = 0; i < ka.size(); ++i) EXPECT_NE(ka[i], unkeyed[i]) << i;
  EXPECT_EQ(ka, ChainedBlockHashes(a, 128, key));  // the same key gives the same chain
  EXPECT_NE(ka, ChainedBlockHashes(a, 128, key + 1));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ka[i], kb[i]) << i;  // 384 shared characters
  for (size_t i = 3; i < ka.size(); ++i) EXPECT_NE(ka[i], kb[i]) << i;
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

// Random Insert/Trim/SetCapacity over chains that share prefixes (a few roots, branching),
// as prompts do, with hashes from `make_hash`: the index agrees with the reference (size,
// and membership of every hash of two chains) after every step, and is usable after Clear.
template <typename MakeHash>
void AgreesWithReferenceUnderRandomOperations(uint64_t seed, size_t max_len, size_t capacity,
                                              size_t min_capacity, size_t capacity_span,
                                              MakeHash make_hash) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> chains;
  for (int c = 0; c < 60; ++c) {
    std::vector<uint64_t> chain;
    const size_t len = 1 + rng() % max_len;
    const size_t shared = c > 0 && rng() % 2 ? rng() % chains[c - 1].size() : 0;
    for (size_t i = 0; i < len; ++i)
      chain.push_back(i < shared ? chains[c - 1][i] : make_hash(rng));
    chains.push_back(std::move(chain));
  }
  PrefixIndex idx(capacity);
  ReferenceIndex ref(capacity);
  for (int step = 0; step < 20000; ++step) {
    const auto& chain = chains[rng() % chains.size()];
    const uint64_t op = rng() % 20;
    if (op < 2) {
      const size_t keep = rng() % (chain.size() + 1);
      idx.Trim(chain, keep);
      ref.Trim(chain, keep);
    } else if (op == 2) {
      const size_t c = min_capacity + rng() % capacity_span;
      idx.SetCapacity(c);
      ref.SetCapacity(c);
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

TEST(PrefixIndex, BehavesAsTheListAndMapLruUnderRandomOperations) {
  // Hashes that collide in the table's slot bits often enough to exercise probing and
  // backward-shift deletion.
  AgreesWithReferenceUnderRandomOperations(
      3, 40, 150, 20, 300, [](std::mt19937_64& rng) { return (rng() % 4096) << 20 | (rng() % 7); });
}

TEST(PrefixIndex, BehavesAsTheListAndMapLruWhenHomeSlotsCrowdTheTableEnd) {
  // The table's home slot is bits 32.. of hash * 0x9e3779b97f4a7c15 (prefix_index.cc):
  // hashes (k << 38 | home << 32) * its inverse have that home in a 64-slot table, which
  // it stays (at most 24 + 8 entries). Homes 60..63, 0, 1 make one probe run that wraps
  // past the table's end with entries on both sides of it, so backward-shift deletion
  // must tell "home after the hole" across the wrap (a non-cyclic test fails here).
  constexpr uint64_t kPhi = 0x9e3779b97f4a7c15ULL;
  uint64_t inverse = kPhi;  // Newton's iteration: correct to 2^64 after 5 steps
  for (int i = 0; i < 5; ++i) inverse *= 2 - kPhi * inverse;
  ASSERT_EQ(kPhi * inverse, 1u);
  AgreesWithReferenceUnderRandomOperations(5, 8, 24, 12, 13, [inverse](std::mt19937_64& rng) {
    const uint64_t home = (60 + rng() % 6) % 64;
    return ((rng() % (uint64_t{1} << 20)) << 38 | home << 32) * inverse;
  });
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
