#include "routing/precise_index.h"

#include <variant>

namespace kinference::routing {

void PreciseIndex::Apply(const kv::EventBatch& batch) {
  for (const kv::KvEvent& e : batch.events) Apply(e);
}

void PreciseIndex::Apply(const kv::KvEvent& event) {
  if (std::holds_alternative<kv::AllBlocksCleared>(event)) {
    blocks_.clear();
    return;
  }
  if (!kv::IsEngineCacheEvent(event)) return;
  if (const auto* s = std::get_if<kv::BlockStored>(&event)) {
    block_size_ = s->block_size;
    if (blocks_.size() + s->block_hashes.size() > max_blocks_) {
      ++overflows_;
      blocks_.clear();
    }
    blocks_.insert(s->block_hashes.begin(), s->block_hashes.end());
  } else if (const auto* r = std::get_if<kv::BlockRemoved>(&event)) {
    for (uint64_t h : r->block_hashes) blocks_.erase(h);
  }
}

size_t PreciseIndex::Match(std::span<const uint64_t> keys) const {
  size_t n = 0;
  while (n < keys.size() && blocks_.contains(keys[n])) ++n;
  return n;
}

}  // namespace kinference::routing
