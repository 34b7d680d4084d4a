#include "engine/block_hash_memo.h"

#include <xxhash.h>

#include <utility>

namespace kinference::engine {

BlockHash BlockHashMemo::Get(const BlockHash* parent, std::span<const TokenId> tokens) {
  const uint64_t parent_key = parent ? parent->key : 0;
  const XXH128_hash_t h = XXH3_128bits_withSeed(tokens.data(), tokens.size_bytes(), parent_key);
  if (!slots_) {
    slots_ = std::make_unique<Slot[]>(kSlots);
    used_.assign(kSlots / 64, 0);
  }
  const size_t set = static_cast<size_t>(h.low64) & (kSlots - 2);  // ways set and set + 1
  auto used = [&](size_t i) { return (used_[i / 64] >> (i % 64)) & 1; };
  auto matches = [&](size_t i) {
    const Slot& s = slots_[i];
    return used(i) && s.lo == h.low64 && s.hi == h.high64 && s.parent == parent_key;
  };
  if (matches(set)) {
    ++hits_;
    return slots_[set].value;
  }
  if (matches(set + 1)) {  // most recent first
    ++hits_;
    std::swap(slots_[set], slots_[set + 1]);
    return slots_[set].value;
  }
  ++misses_;
  BlockHash computed = ChainedBlockHash(parent, tokens);
  if (used(set)) {  // the older way goes
    slots_[set + 1] = slots_[set];
    used_[(set + 1) / 64] |= uint64_t{1} << ((set + 1) % 64);
  }
  slots_[set] = Slot{parent_key, h.low64, h.high64, computed};
  used_[set / 64] |= uint64_t{1} << (set % 64);
  return computed;
}

}  // namespace kinference::engine
