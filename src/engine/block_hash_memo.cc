#include "engine/block_hash_memo.h"

#include <xxhash.h>

#include <utility>

namespace kinference::engine {

BlockHashMemo::TokenHash BlockHashMemo::HashTokens(std::span<const TokenId> tokens) {
  const XXH128_hash_t h = XXH3_128bits(tokens.data(), tokens.size_bytes());
  return {h.low64, h.high64};
}

void BlockHashMemo::Allocate() {
  slots_ = std::make_unique<Slot[]>(kSlots);
  used_.assign(kSlots / 64, 0);
}

BlockHash BlockHashMemo::Get(const BlockHash* parent, std::span<const TokenId> tokens) {
  if (!slots_) Allocate();
  return Lookup(parent, HashTokens(tokens), tokens);
}

void BlockHashMemo::Extend(std::vector<BlockHash>& chain, std::span<const TokenId> tokens,
                           size_t block_size) {
  const size_t n = tokens.size() / block_size;
  if (n == 0) return;
  if (!slots_) Allocate();
  scratch_.resize(n);
  for (size_t i = 0; i < n; ++i) {  // independent: the loads overlap
    scratch_[i] = HashTokens(tokens.subspan(i * block_size, block_size));
    __builtin_prefetch(&slots_[SetOf(scratch_[i])]);
  }
  chain.reserve(chain.size() + n);
  for (size_t i = 0; i < n; ++i) {
    const BlockHash* parent = chain.empty() ? nullptr : &chain.back();
    const BlockHash h = Lookup(parent, scratch_[i], tokens.subspan(i * block_size, block_size));
    chain.push_back(h);
  }
}

BlockHash BlockHashMemo::Lookup(const BlockHash* parent, const TokenHash& th,
                                std::span<const TokenId> tokens) {
  const uint64_t parent_key = parent ? parent->key : 0;
  const size_t set = SetOf(th);  // ways set and set + 1
  auto used = [&](size_t i) { return (used_[i / 64] >> (i % 64)) & 1; };
  auto matches = [&](size_t i) {
    const Slot& s = slots_[i];
    return used(i) && s.lo == th.lo && s.hi == th.hi && s.parent == parent_key;
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
  slots_[set] = Slot{parent_key, th.lo, th.hi, computed};
  used_[set / 64] |= uint64_t{1} << (set % 64);
  return computed;
}

}  // namespace kinference::engine
