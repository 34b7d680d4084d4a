#include "routing/precise_index.h"

#include <gtest/gtest.h>

namespace kinference::routing {
namespace {

kv::BlockStored Stored(std::vector<uint64_t> hashes, int block_size = 2) {
  kv::BlockStored s;
  s.token_ids.assign(hashes.size() * block_size, 1);
  s.block_hashes = std::move(hashes);
  s.block_size = block_size;
  s.medium = "GPU";
  return s;
}

TEST(PreciseIndexTest, MatchStopsAtTheFirstBlockTheEngineDoesNotHold) {
  PreciseIndex idx;
  idx.Apply(Stored({1, 2, 3}));
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{1, 2, 3, 4}), 3u);
  idx.Apply(kv::BlockRemoved{{2}, "GPU", std::nullopt});
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{1, 2, 3}), 1u);  // 3 is held but unreachable
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{9, 1}), 0u);
  EXPECT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx.block_size(), 2);
}

TEST(PreciseIndexTest, AllBlocksClearedEmptiesIt) {
  PreciseIndex idx;
  kv::EventBatch b;
  b.events = {Stored({1, 2}), kv::AllBlocksCleared{}, Stored({5})};
  idx.Apply(b);
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{1}), 0u);
  EXPECT_EQ(idx.Match(std::vector<uint64_t>{5}), 1u);
}

TEST(PreciseIndexTest, OtherMediaAndLoraBlocksAreNotTheEngineCache) {
  PreciseIndex idx;
  kv::BlockStored cpu = Stored({1});
  cpu.medium = "CPU";
  kv::BlockStored lora = Stored({2});
  lora.lora_name = "adapter";
  idx.Apply(cpu);
  idx.Apply(lora);
  EXPECT_EQ(idx.size(), 0u);
}

TEST(PreciseIndexTest, BoundedByMaxBlocks) {
  PreciseIndex idx(/*max_blocks=*/3);
  idx.Apply(Stored({1, 2, 3}));
  idx.Apply(Stored({4, 5}));  // would exceed: cleared first, counted
  EXPECT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx.overflows(), 1u);
}

}  // namespace
}  // namespace kinference::routing
