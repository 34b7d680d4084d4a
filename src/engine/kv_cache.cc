#include "engine/kv_cache.h"

namespace kinference::engine {

BlockHash ChainedBlockHash(const BlockHash* parent, std::span<const TokenId> tokens) {
  static const kv::BlockHasher hasher;  // vLLM's default NONE_HASH seed
  BlockHash h;
  h.digest = hasher.HashBlock(parent ? &parent->digest : nullptr, tokens);
  h.key = kv::ExternalKey(h.digest);
  return h;
}

BlockPool::BlockPool(int num_blocks, int block_size)
    : block_size_(block_size), blocks_(num_blocks > 0 ? num_blocks : 0) {
  for (int b = 0; b < static_cast<int>(blocks_.size()); ++b) PushBack(b);
}

double BlockPool::Usage() const {
  if (blocks_.empty()) return 0;
  return 1.0 - static_cast<double>(num_free_) / static_cast<double>(blocks_.size());
}

std::optional<int> BlockPool::Lookup(uint64_t hash) const {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return it->second;
}

void BlockPool::Touch(std::span<const int> blocks) {
  for (int b : blocks) {
    if (blocks_[b].in_free_queue) Remove(b);
    ++blocks_[b].ref_cnt;
  }
}

bool BlockPool::Allocate(int n, std::vector<int>& out) {
  if (n > num_free_) return false;
  for (int i = 0; i < n; ++i) {
    int b = PopFront();
    Block& blk = blocks_[b];
    if (blk.has_hash) {
      cached_.erase(blk.hash);
      events_.push_back({false, blk.hash, std::nullopt, {}});
      blk.has_hash = false;
    }
    blk.ref_cnt = 1;
    out.push_back(b);
  }
  return true;
}

void BlockPool::Free(std::span<const int> blocks) {
  for (int b : blocks) {
    if (blocks_[b].ref_cnt > 0 && --blocks_[b].ref_cnt == 0) PushBack(b);
  }
}

bool BlockPool::Cache(int block, uint64_t hash, std::optional<uint64_t> parent,
                      std::span<const TokenId> tokens) {
  Block& blk = blocks_[block];
  if (blk.has_hash || cached_.contains(hash)) return false;
  blk.has_hash = true;
  blk.hash = hash;
  cached_.emplace(hash, block);
  events_.push_back({true, hash, parent, std::vector<TokenId>(tokens.begin(), tokens.end())});
  return true;
}

std::optional<uint64_t> BlockPool::HashOf(int block) const {
  if (!blocks_[block].has_hash) return std::nullopt;
  return blocks_[block].hash;
}

std::vector<BlockCacheEvent> BlockPool::TakeEvents() {
  std::vector<BlockCacheEvent> out;
  out.swap(events_);
  return out;
}

void BlockPool::PushBack(int b) {
  Block& blk = blocks_[b];
  blk.prev = tail_;
  blk.next = -1;
  if (tail_ >= 0) {
    blocks_[tail_].next = b;
  } else {
    head_ = b;
  }
  tail_ = b;
  blk.in_free_queue = true;
  ++num_free_;
}

void BlockPool::Remove(int b) {
  Block& blk = blocks_[b];
  if (blk.prev >= 0) {
    blocks_[blk.prev].next = blk.next;
  } else {
    head_ = blk.next;
  }
  if (blk.next >= 0) {
    blocks_[blk.next].prev = blk.prev;
  } else {
    tail_ = blk.prev;
  }
  blk.prev = blk.next = -1;
  blk.in_free_queue = false;
  --num_free_;
}

int BlockPool::PopFront() {
  int b = head_;
  Remove(b);
  return b;
}

}  // namespace kinference::engine
