// JSON request bodies: the one parse used for client-sent JSON by the gateway and
// engine-sim, so every front accepts the same documents; the lenient field readers the
// API translators share; and serialising a body with a few top-level fields changed
// without copying it (what goes upstream differs from what the client sent only there).
//
// Boost.JSON's default nesting limit (32) rejects legitimate deep tool schemas that vLLM
// and the OpenAI API accept; bodies may nest up to kMaxJsonDepth levels. Errors are
// returned, never thrown.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace kinference::api {

inline constexpr unsigned kMaxJsonDepth = 256;

inline boost::json::value ParseJsonBody(std::string_view body, boost::system::error_code& ec) {
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  return boost::json::parse(body, ec, {}, options);
}

// o[key] as an integer; 0 when absent or not an integer.
inline int64_t IntOr0(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v && v->is_int64()) return v->get_int64();
  if (v && v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  return 0;
}

// o[key] as a string; `fallback` when absent or not a string.
inline std::string StringOr(const boost::json::object& o, std::string_view key,
                            std::string fallback = {}) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : fallback;
}

// A top-level field to set while serialising (SerializeWith).
using FieldOverride = std::pair<std::string_view, const boost::json::value&>;

// json::serialize of `body` after `body[key] = value` for each override in order (a key
// already there keeps its place; a new one goes at the end), without copying `body`.
std::string SerializeWith(const boost::json::object& body,
                          std::initializer_list<FieldOverride> overrides);

}  // namespace kinference::api
