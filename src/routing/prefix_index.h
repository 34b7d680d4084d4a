// PrefixIndex: the router's approximate belief of one endpoint's prefix (KV) cache.
//
// Keys are chained hashes of fixed-size character blocks of rendered request text
// (ChainedBlockHashes in router.h), so a hash stands for the whole prefix up to its
// block. Like the Gateway API Inference Extension's prefix-cache scorer, it records what
// the router sent where rather than what the engine reports; unlike it, the prompt is not
// capped at its first blocks. Capacity is a number of blocks (the router derives it from
// vllm:cache_config_info: num_gpu_blocks * block_size tokens, in characters); beyond it
// the least recently used block is evicted.
//
// Invariant that makes Match a binary search: Insert touches a chain's blocks from last
// to first, so a block is never less recent than any later block of the same chain;
// LRU eviction and Trim therefore only ever remove chain suffixes (as vLLM, which frees a
// request's blocks in reverse order so that a chain's tail is evicted first;
// docs.vllm.ai, "Automatic Prefix Caching" design doc).
//
// Layout: an open-addressing table (linear probing, backward-shift deletion) of
// (hash, node) slots, so Match's probe reads one 16-byte slot; LRU order is a doubly
// linked list of nodes in one vector (indices, freed nodes reused). It replaced a
// std::unordered_map + std::list whose lookups were 15% of the 64-replica simulator's
// CPU (64 endpoints' Match per decision, every prompt block per Insert).
//
// Thread-safety: not thread-safe; owned by the Router.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kinference::routing {

class PrefixIndex {
 public:
  explicit PrefixIndex(size_t capacity_blocks) : capacity_(capacity_blocks) {}

  // Number of leading hashes of `chain` present (the longest cached prefix, in blocks).
  size_t Match(std::span<const uint64_t> chain) const;
  // Records that the endpoint now holds `chain` (most recent), evicting LRU blocks.
  void Insert(std::span<const uint64_t> chain);
  // Forgets chain[keep_blocks..] (the engine did not hold them).
  void Trim(std::span<const uint64_t> chain, size_t keep_blocks);
  // Changes the bound, evicting as needed. 0 is treated as 1.
  void SetCapacity(size_t capacity_blocks);
  void Clear();

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool Contains(uint64_t hash) const { return FindSlot(hash) != kNone; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Slot {
    uint64_t hash = 0;
    uint32_t node = kNone;  // kNone: empty
  };
  struct Node {
    uint64_t hash = 0;
    uint32_t prev = kNone, next = kNone;  // toward the most / least recent
  };
  size_t Home(uint64_t hash) const;
  uint32_t FindSlot(uint64_t hash) const;  // slot index, or kNone
  void EraseSlot(uint32_t slot);           // frees its node and unlinks it
  void Grow();
  void Unlink(uint32_t node);
  void PushFront(uint32_t node);
  void EvictToCapacity();

  size_t capacity_;
  size_t size_ = 0;
  std::vector<Slot> slots_;  // power-of-two size, at most half full; empty until used
  std::vector<Node> nodes_;
  std::vector<uint32_t> free_nodes_;
  uint32_t head_ = kNone, tail_ = kNone;  // most / least recent
};

}  // namespace kinference::routing
