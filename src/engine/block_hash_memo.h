// BlockHashMemo: ChainedBlockHash (engine/kv_cache.h) with the hashes of recently seen
// blocks remembered. Private to src/engine (one per Engine::Impl).
//
// sha256 over vLLM's pickle of (parent digest, token ids) was a fifth of the simulator's
// CPU time, and a prompt repeats the blocks of earlier prompts (shared prefixes, earlier
// turns). A block is looked up by (parent key, XXH3-128 of its token ids seeded with the
// parent key); a miss computes ChainedBlockHash and stores it. Deterministic: Get returns
// exactly what ChainedBlockHash returns (up to a collision of the 64-bit parent key and
// the 128-bit token hash together, as with the two unordered_maps this replaces).
//
// Layout: kSlots 64-byte slots (one cache line each: key 24 B + BlockHash 40 B), 2-way
// set-associative with LRU within a set, allocated on first use (2 MiB). Replaces two
// generations of std::unordered_map<key, BlockHash> of 16,384 entries each, whose node
// and bucket lookups were 14% of the 64-replica simulator's CPU (cache misses: one probe
// here touches one line).
//
// Thread-safety: none (owned by one engine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/kv_cache.h"

namespace kinference::engine {

class BlockHashMemo {
 public:
  static constexpr size_t kSlots = size_t{1} << 15;  // same capacity as the maps it replaces

  // == ChainedBlockHash(parent, tokens).
  BlockHash Get(const BlockHash* parent, std::span<const TokenId> tokens);

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct alignas(64) Slot {
    uint64_t parent = 0, lo = 0, hi = 0;
    BlockHash value;
  };
  static_assert(sizeof(Slot) == 64);
  std::unique_ptr<Slot[]> slots_;
  std::vector<uint64_t> used_;  // bit per slot
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace kinference::engine
