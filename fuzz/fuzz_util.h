// Helpers shared by the libFuzzer targets: a check that traps (so libFuzzer saves the
// input) and JSON/SSE checks on what a codec produced.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/sse.h"

namespace kinference::fuzz {

inline void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// `text` is one JSON value (what the gateway sends a client or an upstream must parse).
inline boost::json::value MustParseJson(std::string_view text) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  Check(!ec);
  return v;
}

// Every event of an SSE byte stream the gateway produced.
inline std::vector<api::SseEvent> SseEvents(std::string_view bytes) {
  std::vector<api::SseEvent> out;
  api::SseParser parser;
  parser.Feed(bytes, [&](const api::SseEvent& e) { out.push_back(e); });
  return out;
}

// Events whose data the input's first bytes spell out, so one input drives a stream.
inline std::vector<api::SseEvent> InputEvents(std::string_view bytes) { return SseEvents(bytes); }

}  // namespace kinference::fuzz
