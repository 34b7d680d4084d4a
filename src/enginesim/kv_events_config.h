// engine-sim's KV-event publishing, configured as vLLM's (`--kv-events-config`, vLLM's
// KVEventsConfig: vllm/config/kv_events.py, vLLM 0.32) plus the two wire choices real vLLM
// makes elsewhere: the event encoding (maps with a "type" key since mid-2026, positional
// arrays before) and the block-hash kind (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES: 64-bit ints
// by default, else the 32-byte digest).
//
// KVEventsConfig keys accepted (JSON object; others are refused, as vLLM refuses them):
//   enable_kv_cache_events  bool, default false
//   publisher               "zmq" | "null" (default "zmq" when enabled, else "null")
//   endpoint                default "tcp://*:5557"; port 0 binds a free port
//   replay_endpoint         default none (no replay socket)
//   buffer_steps            batches kept for replay, default 10000
//   hwm, max_queue_size     default 100000 (max_queue_size bounds the send queue)
//   topic                   default ""
// Unlike vLLM, which connects (instead of binding) for a non-wildcard address,
// engine-sim always binds, so "tcp://127.0.0.1:0" works in tests on loopback.
//
// /kv_event_sources (vLLM's GET route) answers {"0": KVEventsConfig} with every key above,
// `endpoint`/`replay_endpoint` as configured but with the bound port (a configured port 0
// is replaced by the port chosen), or {} when publishing is off.
//
// Errors: ParseKvEventsConfig returns kInvalidArgument naming the key. Thread-safety: pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "kv/event_codec.h"

namespace kinference::enginesim {

struct KvEventsConfig {
  bool enabled = false;  // enable_kv_cache_events and publisher "zmq"
  std::string endpoint = "tcp://*:5557";
  std::optional<std::string> replay_endpoint;
  size_t buffer_steps = 10000;
  size_t hwm = 100000;
  size_t max_queue_size = 100000;
  std::string topic;
  kv::EventEncoding encoding = kv::EventEncoding::kMap;
  kv::HashEncoding hashes = kv::HashEncoding::kInt;
};

Result<KvEventsConfig> ParseKvEventsConfig(std::string_view json);
Result<kv::EventEncoding> ParseEventEncoding(std::string_view name);  // "map" | "array"
Result<kv::HashEncoding> ParseHashEncoding(std::string_view name);    // "int" | "bytes"

// `configured` with its port replaced by the port of `bound` (ZeroMQ's last endpoint,
// e.g. "tcp://0.0.0.0:40123"): "tcp://*:0" -> "tcp://*:40123".
std::string WithBoundPort(const std::string& configured, const std::string& bound);

// The /kv_event_sources body for `config` published on the bound endpoints.
std::string KvEventSourcesBody(const KvEventsConfig& config, const std::string& bound_endpoint,
                               const std::string& bound_replay_endpoint);

}  // namespace kinference::enginesim
