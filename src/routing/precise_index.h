// PreciseIndex: what one endpoint's prefix (KV) cache holds, as the engine itself reports
// it through vLLM's KV events (kv/events.h), keyed by the engine's block hashes.
//
// Unlike PrefixIndex (the router's approximate belief from what it dispatched), this
// sees evictions, a restart that emptied the cache, and what other gateway replicas
// sent. It follows the engine's own cache only (kv::IsEngineCacheEvent: medium GPU,
// group 0, no LoRA). A request matches the blocks of its prompt's block keys
// (kv::BlockHasher::BlockKeys with the engine's block size) up to the first missing
// one, as vLLM's find_longest_cache_hit stops at the first miss.
//
// Memory: one hash-set entry per cached block of the engine (num_gpu_blocks at most,
// plus blocks announced by a publisher but not yet removed; bounded by `max_blocks`,
// beyond which the index is cleared and counted, rather than grow without bound on a
// publisher that never sends BlockRemoved).
//
// Thread-safety: not thread-safe; owned by the Router.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_set>

#include "kv/events.h"

namespace kinference::routing {

class PreciseIndex {
 public:
  explicit PreciseIndex(size_t max_blocks = 1 << 24) : max_blocks_(max_blocks) {}

  void Apply(const kv::EventBatch& batch);
  void Apply(const kv::KvEvent& event);
  void Clear() { blocks_.clear(); }

  // Number of leading keys of `keys` the engine holds.
  size_t Match(std::span<const uint64_t> keys) const;
  size_t size() const { return blocks_.size(); }
  // Engine block size (tokens) from the last BlockStored; 0 until one is seen.
  int block_size() const { return block_size_; }
  uint64_t overflows() const { return overflows_; }

 private:
  size_t max_blocks_;
  std::unordered_set<uint64_t> blocks_;
  int block_size_ = 0;
  uint64_t overflows_ = 0;
};

}  // namespace kinference::routing
