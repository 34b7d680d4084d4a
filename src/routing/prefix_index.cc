#include "routing/prefix_index.h"

#include <xxhash.h>

#include <algorithm>

#include "routing/router.h"

namespace kinference::routing {

std::vector<uint64_t> ChainedBlockHashes(std::string_view text, size_t block_chars, uint64_t key) {
  std::vector<uint64_t> out;
  if (block_chars == 0) return out;
  size_t n = text.size() / block_chars;
  out.reserve(n);
  uint64_t prev = key;
  for (size_t i = 0; i < n; ++i) {
    // The previous block's hash seeds this one: hash[i] covers blocks 0..i.
    prev = XXH3_64bits_withSeed(text.data() + i * block_chars, block_chars, prev);
    out.push_back(prev);
  }
  return out;
}

size_t PrefixIndex::Match(std::span<const uint64_t> chain) const {
  // Presence is monotone along a chain (see header), so binary-search its end.
  size_t lo = 0, hi = chain.size();  // answer in [lo, hi]
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;  // test chain[mid-1]
    if (Contains(chain[mid - 1]))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

size_t PrefixIndex::Home(uint64_t hash) const {
  // Fibonacci hashing: bits 32.. of hash * 2^64/phi (the high bits of the product mix all
  // of the hash; a table never reaches 2^32 slots).
  return static_cast<size_t>((hash * 0x9e3779b97f4a7c15ULL) >> 32) & (slots_.size() - 1);
}

uint32_t PrefixIndex::FindSlot(uint64_t hash) const {
  if (slots_.empty()) return kNone;
  const size_t mask = slots_.size() - 1;
  for (size_t i = Home(hash);; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.node == kNone) return kNone;
    if (s.hash == hash) return static_cast<uint32_t>(i);
  }
}

// Neither the table nor the node vector shrinks (nor on Clear): memory follows the largest
// size reached (capacity plus one chain), about 48-80 bytes a block (a 16-byte node, two
// to four 16-byte slots), as the unordered_map's buckets did.
void PrefixIndex::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.node == kNone) continue;
    size_t i = Home(s.hash);
    while (slots_[i].node != kNone) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void PrefixIndex::Unlink(uint32_t n) {
  Node& node = nodes_[n];
  if (node.prev != kNone)
    nodes_[node.prev].next = node.next;
  else
    head_ = node.next;
  if (node.next != kNone)
    nodes_[node.next].prev = node.prev;
  else
    tail_ = node.prev;
  node.prev = node.next = kNone;
}

void PrefixIndex::PushFront(uint32_t n) {
  nodes_[n].prev = kNone;
  nodes_[n].next = head_;
  if (head_ != kNone) nodes_[head_].prev = n;
  head_ = n;
  if (tail_ == kNone) tail_ = n;
}

void PrefixIndex::EraseSlot(uint32_t slot) {
  const uint32_t n = slots_[slot].node;
  Unlink(n);
  free_nodes_.push_back(n);
  --size_;
  // Backward-shift deletion: move later slots of the probe run into the hole when their
  // home is not between the hole and them (cyclically), so lookups need no tombstones.
  const size_t mask = slots_.size() - 1;
  size_t hole = slot;
  for (size_t i = (hole + 1) & mask; slots_[i].node != kNone; i = (i + 1) & mask) {
    const size_t home = Home(slots_[i].hash);
    const bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
    if (stays) continue;
    slots_[hole] = slots_[i];
    hole = i;
  }
  slots_[hole] = Slot{};
}

void PrefixIndex::Insert(std::span<const uint64_t> chain) {
  for (size_t k = chain.size(); k-- > 0;) {
    const uint32_t slot = FindSlot(chain[k]);
    if (slot != kNone) {
      const uint32_t n = slots_[slot].node;
      if (n != head_) {
        Unlink(n);
        PushFront(n);
      }
      continue;
    }
    if (2 * (size_ + 1) > slots_.size()) Grow();
    uint32_t n;
    if (!free_nodes_.empty()) {
      n = free_nodes_.back();
      free_nodes_.pop_back();
    } else {
      n = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    nodes_[n].hash = chain[k];
    PushFront(n);
    const size_t mask = slots_.size() - 1;
    size_t i = Home(chain[k]);
    while (slots_[i].node != kNone) i = (i + 1) & mask;
    slots_[i] = Slot{chain[k], n};
    ++size_;
  }
  EvictToCapacity();
}

void PrefixIndex::Trim(std::span<const uint64_t> chain, size_t keep_blocks) {
  for (size_t k = keep_blocks; k < chain.size(); ++k) {
    const uint32_t slot = FindSlot(chain[k]);
    if (slot != kNone) EraseSlot(slot);
  }
}

void PrefixIndex::SetCapacity(size_t capacity_blocks) {
  capacity_ = std::max<size_t>(1, capacity_blocks);
  EvictToCapacity();
}

void PrefixIndex::Clear() {
  slots_.clear();
  nodes_.clear();
  free_nodes_.clear();
  size_ = 0;
  head_ = tail_ = kNone;
}

void PrefixIndex::EvictToCapacity() {
  while (size_ > capacity_) EraseSlot(FindSlot(nodes_[tail_].hash));
}

}  // namespace kinference::routing
