// BlockHashMemo: ChainedBlockHash (engine/kv_cache.h) with the hashes of recently seen
// blocks remembered. Private to src/engine (one per Engine::Impl).
//
// sha256 over vLLM's pickle of (parent digest, token ids) was a fifth of the simulator's
// CPU time, and a prompt repeats the blocks of earlier prompts (shared prefixes, earlier
// turns). A block is looked up by (parent key, XXH3-128 of its token ids); a miss computes
// ChainedBlockHash and stores it. Deterministic: Get and Extend return exactly what
// ChainedBlockHash returns (up to a collision of the 64-bit parent key and the 128-bit
// token hash together, as with the two unordered_maps this replaces).
//
// Layout: kSlots 64-byte slots (one cache line each: key 24 B + BlockHash 40 B), 2-way
// set-associative with LRU within a set, allocated on first use (2 MiB). The set is
// chosen by the token hash alone, so Extend hashes all of a prompt's blocks first and
// prefetches their sets before walking the chain (the walk is serial: each block's key
// needs its parent's); the same 16 tokens under many parents share a set (correct, only
// slower). Replaces two generations of std::unordered_map<key, BlockHash> of 16,384
// entries each, whose node and bucket lookups were 14% of the 64-replica simulator's CPU
// (cache misses: one probe here touches one line).
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
  // Appends the hashes of tokens' tokens.size() / block_size full blocks to `chain`, the
  // first chained to chain.back() (no parent when `chain` is empty): block i of `tokens`
  // gets ChainedBlockHash(&chain[previous], block i). block_size > 0.
  void Extend(std::vector<BlockHash>& chain, std::span<const TokenId> tokens, size_t block_size);

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct alignas(64) Slot {
    uint64_t parent = 0, lo = 0, hi = 0;
    BlockHash value;
  };
  static_assert(sizeof(Slot) == 64);
  struct TokenHash {
    uint64_t lo, hi;
  };
  static TokenHash HashTokens(std::span<const TokenId> tokens);
  size_t SetOf(const TokenHash& th) const { return static_cast<size_t>(th.lo) & (kSlots - 2); }
  void Allocate();
  BlockHash Lookup(const BlockHash* parent, const TokenHash& th, std::span<const TokenId> tokens);

  std::vector<TokenHash> scratch_;  // Extend's token hashes
  std::unique_ptr<Slot[]> slots_;
  std::vector<uint64_t> used_;  // bit per slot
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace kinference::engine
