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
// Thread-safety: not thread-safe; owned by the Router.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>

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

  size_t size() const { return map_.size(); }
  size_t capacity() const { return capacity_; }
  bool Contains(uint64_t hash) const { return map_.count(hash) != 0; }

 private:
  void EvictToCapacity();

  size_t capacity_;
  std::list<uint64_t> lru_;  // front = most recent
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> map_;
};

}  // namespace kinference::routing
