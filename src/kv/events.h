// vLLM's KV-cache events as the router needs them (vllm/distributed/kv_events.py): a
// publisher sends batches of BlockStored / BlockRemoved / AllBlocksCleared events, each
// batch a ZeroMQ message [topic, 8-byte big-endian sequence number, msgpack payload].
//
// Block hashes are kept as their 64-bit external key (kv/block_hash.h ExternalKey):
// vLLM sends either that integer (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES, the default) or
// the 32-byte digest, whose last 8 bytes give the same key.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kinference::kv {

// "GPU": the engine's own KV cache (vLLM sends it on CPU builds too). Other media (a
// CPU offload tier) are decoded but are not the engine's prefix cache.
inline constexpr const char* kMediumGpu = "GPU";

struct BlockStored {
  std::vector<uint64_t> block_hashes;
  std::optional<uint64_t> parent_block_hash;
  std::vector<uint32_t> token_ids;  // block_hashes.size() x block_size
  int block_size = 0;
  std::optional<int64_t> lora_id;
  std::optional<std::string> medium;
  std::optional<std::string> lora_name;
  std::optional<int64_t> group_idx;
};

struct BlockRemoved {
  std::vector<uint64_t> block_hashes;
  std::optional<std::string> medium;
  std::optional<int64_t> group_idx;
};

struct AllBlocksCleared {};

using KvEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

struct EventBatch {
  double ts = 0;  // publisher's wall-clock time (s since the epoch)
  std::vector<KvEvent> events;
  std::optional<int64_t> data_parallel_rank;
};

// True for events about the engine's own cache (medium GPU or unset, group 0 or unset):
// the ones the router's precise index follows.
bool IsEngineCacheEvent(const KvEvent& e);

}  // namespace kinference::kv
