// engine-sim's Anthropic-compatible surface (POST /v1/messages), so tests have a local
// Anthropic provider: header checks as Anthropic's API does them, and the translation of
// a Messages request into the equivalent chat completion, reusing the
// Anthropic codec (api/anthropic/messages_*.h: request -> OpenAI, and OpenAI
// responses / chunks -> Anthropic message / event stream, which EngineSimServer feeds
// with the chunks it would have streamed for /v1/chat/completions).
//
// Header rules (Anthropic API reference "Overview" / "Versioning", and the errors its
// API answers, e.g. github.com/PipedreamHQ/pipedream/issues/9697,
// github.com/karthink/gptel/issues/354):
//   no anthropic-version          -> 400 invalid_request_error
//                                    "anthropic-version: header is required"
//   required key set, no x-api-key -> 401 authentication_error "x-api-key header is required"
//   required key set, other key    -> 401 authentication_error "invalid x-api-key"
// The key is `x-api-key`, or else `Authorization: Bearer <key>` (how the anthropic Python
// SDK 2.x sends it).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>

#include "api/anthropic/messages_response.h"
#include "common/status.h"
#include "http/server.h"

namespace kinference::enginesim {

// Ok, or the error to answer (kInvalidArgument / kUnauthenticated). `required_key`
// empty: any (or no) key is accepted.
Status CheckAnthropicHeaders(const http::Headers& headers, const std::string& required_key);

struct MessagesCall {
  boost::json::object chat_body;  // the equivalent /v1/chat/completions body
  bool stream = false;
  api::anthropic::ResponseContext response;  // for translating the answer back
};
// Errors: kInvalidArgument naming the field in Anthropic's style.
Result<MessagesCall> ParseMessagesCall(std::string_view body);

// Anthropic's error response for `status`: (HTTP status, {"type":"error",...}).
int AnthropicErrorStatus(const Status& status);
std::string AnthropicErrorBody(const Status& status);

}  // namespace kinference::enginesim
