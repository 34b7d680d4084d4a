#include "enginesim/kv_events_config.h"

#include <boost/json.hpp>

namespace kinference::enginesim {
namespace json = boost::json;

namespace {

Status Bad(const std::string& key, const std::string& what) {
  return InvalidArgument("--kv-events-config: " + key + ": " + what);
}

Result<size_t> Count(const json::value& v, const std::string& key) {
  if (!v.is_int64() || v.as_int64() < 1) return Bad(key, "expected a positive integer");
  return static_cast<size_t>(v.as_int64());
}

}  // namespace

Result<KvEventsConfig> ParseKvEventsConfig(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return InvalidArgument("--kv-events-config: expected a JSON object");
  KvEventsConfig c;
  bool enable = false;
  std::optional<std::string> publisher;
  for (const auto& [k, val] : v.as_object()) {
    const std::string key(k);
    if (key == "enable_kv_cache_events") {
      if (!val.is_bool()) return Bad(key, "expected true or false");
      enable = val.as_bool();
    } else if (key == "publisher") {
      if (!val.is_string() || (val.as_string() != "zmq" && val.as_string() != "null"))
        return Bad(key, "expected \"zmq\" or \"null\"");
      publisher = std::string(val.as_string());
    } else if (key == "endpoint" || key == "topic") {
      if (!val.is_string()) return Bad(key, "expected a string");
      (key == "endpoint" ? c.endpoint : c.topic) = std::string(val.as_string());
    } else if (key == "replay_endpoint") {
      if (val.is_null()) {
        c.replay_endpoint.reset();
      } else if (val.is_string()) {
        c.replay_endpoint = std::string(val.as_string());
      } else {
        return Bad(key, "expected a string or null");
      }
    } else if (key == "buffer_steps" || key == "hwm" || key == "max_queue_size") {
      auto n = Count(val, key);
      if (!n.ok()) return n.status();
      (key == "buffer_steps" ? c.buffer_steps : key == "hwm" ? c.hwm : c.max_queue_size) = *n;
    } else {
      return Bad(key, "unknown key");
    }
  }
  c.enabled = enable && publisher.value_or("zmq") == "zmq";
  if (c.enabled && !c.endpoint.starts_with("tcp://"))
    return Bad("endpoint", "expected tcp://host:port");
  return c;
}

Result<kv::EventEncoding> ParseEventEncoding(std::string_view name) {
  if (name == "map") return kv::EventEncoding::kMap;
  if (name == "array") return kv::EventEncoding::kArray;
  return InvalidArgument("--kv-events-encoding: expected map or array");
}

Result<kv::HashEncoding> ParseHashEncoding(std::string_view name) {
  if (name == "int") return kv::HashEncoding::kInt;
  if (name == "bytes") return kv::HashEncoding::kBytes;
  return InvalidArgument("--kv-events-hashes: expected int or bytes");
}

std::string WithBoundPort(const std::string& configured, const std::string& bound) {
  size_t c = configured.rfind(':'), b = bound.rfind(':');
  if (c == std::string::npos || b == std::string::npos) return bound;
  return configured.substr(0, c) + bound.substr(b);
}

std::string KvEventSourcesBody(const KvEventsConfig& c, const std::string& bound_endpoint,
                               const std::string& bound_replay_endpoint) {
  if (!c.enabled) return "{}";
  json::value replay = nullptr;
  if (c.replay_endpoint) replay = WithBoundPort(*c.replay_endpoint, bound_replay_endpoint);
  json::object source{{"enable_kv_cache_events", true},
                      {"publisher", "zmq"},
                      {"endpoint", WithBoundPort(c.endpoint, bound_endpoint)},
                      {"replay_endpoint", std::move(replay)},
                      {"buffer_steps", c.buffer_steps},
                      {"hwm", c.hwm},
                      {"max_queue_size", c.max_queue_size},
                      {"topic", c.topic}};
  return json::serialize(json::object{{"0", std::move(source)}});
}

}  // namespace kinference::enginesim
