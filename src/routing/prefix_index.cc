#include "routing/prefix_index.h"

#include <xxhash.h>

#include <algorithm>

#include "routing/router.h"

namespace kinference::routing {

std::vector<uint64_t> ChainedBlockHashes(std::string_view text, size_t block_chars) {
  std::vector<uint64_t> out;
  if (block_chars == 0) return out;
  size_t n = text.size() / block_chars;
  out.reserve(n);
  uint64_t prev = 0;
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
    if (map_.count(chain[mid - 1]) != 0)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

void PrefixIndex::Insert(std::span<const uint64_t> chain) {
  for (size_t k = chain.size(); k-- > 0;) {
    auto it = map_.find(chain[k]);
    if (it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
    } else {
      lru_.push_front(chain[k]);
      map_.emplace(chain[k], lru_.begin());
    }
  }
  EvictToCapacity();
}

void PrefixIndex::Trim(std::span<const uint64_t> chain, size_t keep_blocks) {
  for (size_t k = keep_blocks; k < chain.size(); ++k) {
    auto it = map_.find(chain[k]);
    if (it == map_.end()) continue;
    lru_.erase(it->second);
    map_.erase(it);
  }
}

void PrefixIndex::SetCapacity(size_t capacity_blocks) {
  capacity_ = std::max<size_t>(1, capacity_blocks);
  EvictToCapacity();
}

void PrefixIndex::Clear() {
  lru_.clear();
  map_.clear();
}

void PrefixIndex::EvictToCapacity() {
  while (map_.size() > capacity_) {
    map_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace kinference::routing
