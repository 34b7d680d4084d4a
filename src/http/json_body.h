// JSON request bodies: the one parse used for client-sent JSON by the gateway and
// engine-sim, so every front accepts the same documents.
//
// Boost.JSON's default nesting limit (32) rejects legitimate deep tool schemas that vLLM
// and the OpenAI API accept; bodies may nest up to kMaxJsonDepth levels. Errors are
// returned, never thrown.
//
// Thread-safety: pure function.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <string_view>

namespace kinference::http {

inline constexpr unsigned kMaxJsonDepth = 256;

inline boost::json::value ParseJsonBody(std::string_view body, boost::system::error_code& ec) {
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  return boost::json::parse(body, ec, {}, options);
}

}  // namespace kinference::http
