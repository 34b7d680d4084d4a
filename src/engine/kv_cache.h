// BlockPool: the paged KV cache of the engine model, after vLLM V1's block_pool.py and
// kv_cache_manager.py.
//
// Promises: a fixed pool of `num_blocks` KV blocks of `block_size` tokens. Full blocks
// are identified by chained hashes computed as vLLM's (ChainedBlockHash: sha256 over the
// parent's digest and the block's token ids, kv/block_hash.h), keyed by the 64-bit key
// vLLM's KV events carry, so equal keys mean equal token prefixes. Blocks are
// reference-counted; a block whose count drops to 0 is appended to the tail of the free
// queue and keeps its hash (stays a prefix-cache hit) until it is reused. Allocation
// pops from the head of the free queue (least recently freed first = LRU); popping a
// block that still has a hash evicts it from the cache (BlockRemoved event). Callers
// free a request's blocks in reverse order so its tail blocks are evicted first, as
// vLLM does.
//
// Units: blocks and tokens. Errors: Allocate returns false (and changes nothing) when
// there are not enough free blocks. No I/O, no clock.
//
// Thread-safety: not thread-safe; owned by one Engine.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/tokenizer.h"
#include "kv/block_hash.h"

namespace kinference::engine {

// Hash of a full block as vLLM computes it with its default sha256 algorithm and NONE_HASH
// seed (kv/block_hash.h): `digest` chains to the next block; `key` (the digest's last
// 8 bytes) names the block in the cache and in KV events. The first block of a sequence
// has no parent (nullptr).
struct BlockHash {
  kv::Digest digest{};
  uint64_t key = 0;
};
BlockHash ChainedBlockHash(const BlockHash* parent, std::span<const TokenId> tokens);

// One cache change, in vLLM's KV-events terms.
struct BlockCacheEvent {
  bool stored = true;  // true: BlockStored, false: BlockRemoved
  uint64_t hash = 0;
  std::optional<uint64_t> parent;  // BlockStored only
  std::vector<TokenId> tokens;     // BlockStored only: the block's token ids
};

class BlockPool {
 public:
  BlockPool(int num_blocks, int block_size);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  // Blocks with reference count 0 (including cached ones that may be evicted).
  int num_free_blocks() const { return num_free_; }
  // 1 - free/total, as vLLM's BlockPool.get_usage().
  double Usage() const;

  // Block id holding a cached block with this hash, if any.
  std::optional<int> Lookup(uint64_t hash) const;
  // True when the block is referenced by no request (it sits in the free queue).
  bool IsFree(int block) const { return blocks_[block].ref_cnt == 0; }
  // Adds one reference to each block (prefix-cache hits), taking free ones out of the
  // free queue.
  void Touch(std::span<const int> blocks);
  // Appends `n` fresh blocks (reference count 1) to `out`; false and no change when fewer
  // than n are free. Evicts cached blocks it reuses.
  bool Allocate(int n, std::vector<int>& out);
  // Drops one reference from each block, in the order given; blocks reaching 0 go to the
  // free queue's tail.
  void Free(std::span<const int> blocks);
  // Marks `block` as the full block with `hash` (child of `parent`, holding `tokens`) and
  // records a BlockStored event. Returns false (block left uncached) if the hash is
  // already cached in another block or the block already has a hash.
  bool Cache(int block, uint64_t hash, std::optional<uint64_t> parent,
             std::span<const TokenId> tokens = {});
  std::optional<uint64_t> HashOf(int block) const;

  // Events since the last call, in order.
  std::vector<BlockCacheEvent> TakeEvents();

 private:
  struct Block {
    int ref_cnt = 0;
    bool has_hash = false;
    uint64_t hash = 0;
    int prev = -1, next = -1;  // free-queue links; -1 = none
    bool in_free_queue = false;
  };
  void PushBack(int b);
  void Remove(int b);
  int PopFront();

  int block_size_;
  std::vector<Block> blocks_;
  int head_ = -1, tail_ = -1, num_free_ = 0;
  std::unordered_map<uint64_t, int> cached_;
  std::vector<BlockCacheEvent> events_;
};

}  // namespace kinference::engine
