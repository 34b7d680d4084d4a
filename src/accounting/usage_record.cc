#include "accounting/usage_record.h"

#include <fmt/format.h>

#include <boost/json.hpp>

namespace kinference::accounting {
namespace json = boost::json;

std::string ToJsonLine(const UsageRecord& r) {
  json::object o{
      {"record_id", r.record_id},
      {"time_ms", r.time_ms},
      {"request_id", r.request_id},
      {"tenant", r.tenant},
      {"front", r.front},
      {"requested_model", r.requested_model},
      {"served_model", r.served_model},
      {"provider", r.provider},
      {"endpoint", r.endpoint},
      {"prompt_tokens", r.tokens.prompt},
      {"cached_tokens", r.tokens.cached},
      {"cache_creation_tokens", r.tokens.cache_creation},
      {"completion_tokens", r.tokens.completion},
      {"usage_estimated", r.usage_estimated},
      {"ttft_ms", r.ttft_ms},
      {"e2e_ms", r.e2e_ms},
      {"outcome", r.outcome},
      {"status", r.status},
      {"policy_decision", r.policy_decision},
      {"cost_nano_usd", r.cost_nano_usd},
      {"priced", r.priced},
      {"gateway", r.gateway},
  };
  return json::serialize(o);
}

namespace {

template <typename T>
bool Get(const json::object& o, const char* key, T& out);

template <>
bool Get(const json::object& o, const char* key, std::string& out) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_string()) return false;
  out = std::string(v->get_string());
  return true;
}
template <>
bool Get(const json::object& o, const char* key, int64_t& out) {
  const auto* v = o.if_contains(key);
  if (!v) return false;
  if (v->is_int64()) {
    out = v->get_int64();
    return true;
  }
  if (v->is_uint64() && v->get_uint64() <= INT64_MAX) {
    out = static_cast<int64_t>(v->get_uint64());
    return true;
  }
  return false;
}
template <>
bool Get(const json::object& o, const char* key, int& out) {
  int64_t v;
  if (!Get(o, key, v) || v < INT32_MIN || v > INT32_MAX) return false;
  out = static_cast<int>(v);
  return true;
}
template <>
bool Get(const json::object& o, const char* key, double& out) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_number()) return false;
  out = v->to_number<double>();
  return true;
}
template <>
bool Get(const json::object& o, const char* key, bool& out) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_bool()) return false;
  out = v->get_bool();
  return true;
}

}  // namespace

Result<UsageRecord> FromJsonLine(std::string_view line) {
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return InvalidArgument("usage record: not a JSON object");
  const json::object& o = v.get_object();
  UsageRecord r;
  bool ok = Get(o, "record_id", r.record_id) && Get(o, "time_ms", r.time_ms) &&
            Get(o, "request_id", r.request_id) && Get(o, "tenant", r.tenant) &&
            Get(o, "front", r.front) && Get(o, "requested_model", r.requested_model) &&
            Get(o, "served_model", r.served_model) && Get(o, "provider", r.provider) &&
            Get(o, "endpoint", r.endpoint) && Get(o, "prompt_tokens", r.tokens.prompt) &&
            Get(o, "cached_tokens", r.tokens.cached) &&
            Get(o, "cache_creation_tokens", r.tokens.cache_creation) &&
            Get(o, "completion_tokens", r.tokens.completion) &&
            Get(o, "usage_estimated", r.usage_estimated) && Get(o, "ttft_ms", r.ttft_ms) &&
            Get(o, "e2e_ms", r.e2e_ms) && Get(o, "outcome", r.outcome) &&
            Get(o, "status", r.status) && Get(o, "policy_decision", r.policy_decision) &&
            Get(o, "cost_nano_usd", r.cost_nano_usd) && Get(o, "priced", r.priced) &&
            Get(o, "gateway", r.gateway);
  if (!ok || r.record_id.empty()) return InvalidArgument("usage record: missing or bad field");
  return r;
}

std::string MakeRecordId(uint64_t high, uint64_t low) {
  return fmt::format("{:016x}{:016x}", high, low);
}

}  // namespace kinference::accounting
