// vLLM KV-event batches (msgpack, kv/event_codec.h) as the gateway's subscriber receives
// them: any bytes decode or give kInvalidArgument without reading past the payload; a
// decoded batch re-encodes (both event encodings) to bytes that decode to the same events.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <variant>

#include "fuzz_util.h"
#include "kv/event_codec.h"

using namespace kinference;
using kinference::fuzz::Check;

namespace {

bool Same(const kv::KvEvent& a, const kv::KvEvent& b) {
  if (a.index() != b.index()) return false;
  if (const auto* s = std::get_if<kv::BlockStored>(&a)) {
    const auto& t = std::get<kv::BlockStored>(b);
    return s->block_hashes == t.block_hashes && s->parent_block_hash == t.parent_block_hash &&
           s->token_ids == t.token_ids && s->block_size == t.block_size &&
           s->lora_id == t.lora_id && s->medium == t.medium && s->lora_name == t.lora_name &&
           s->group_idx == t.group_idx;
  }
  if (const auto* r = std::get_if<kv::BlockRemoved>(&a)) {
    const auto& t = std::get<kv::BlockRemoved>(b);
    return r->block_hashes == t.block_hashes && r->medium == t.medium &&
           r->group_idx == t.group_idx;
  }
  return true;
}

void CheckSame(const kv::EventBatch& a, const kv::EventBatch& b) {
  Check(a.events.size() == b.events.size());
  Check(a.data_parallel_rank == b.data_parallel_rank);
  for (size_t i = 0; i < a.events.size(); ++i) Check(Same(a.events[i], b.events[i]));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size copy, so ASan sees any read past the payload.
  std::unique_ptr<char[]> copy(new char[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  auto batch = kv::DecodeBatch(std::string_view(copy.get(), size));
  if (!batch.ok()) {
    Check(batch.status().code() == ErrorCode::kInvalidArgument);
    return 0;
  }
  for (auto events : {kv::EventEncoding::kMap, kv::EventEncoding::kArray}) {
    auto again = kv::DecodeBatch(kv::EncodeBatch(*batch, events));
    Check(again.ok());
    CheckSame(*batch, *again);
  }
  return 0;
}
