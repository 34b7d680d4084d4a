// The OpenAI error body, {"error":{"message","type","param","code"}}, for a non-ok
// Status (OpenAI API reference "Error codes"; vLLM answers the same shape). `type` is
// OpenAiErrorType(code) and `code` the HTTP status as a number (HttpStatusFor), both from
// common/status.h; `param` is the Status's param, null when empty.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kinference::api {

std::string OpenAiErrorBody(const Status& status);

// As above with `code` set to `http_status` (for statuses with no ErrorCode, e.g. 405).
std::string OpenAiErrorBody(const Status& status, int http_status);

// An upstream SSE event's data that reports an error mid-stream ({"error": {...}}, or
// vLLM's {"object": "error", ...}): the gateway's own error event data for the client, in
// OpenAI's shape, with the upstream's status class and the request id, never the
// upstream's words (they may carry a key or an internal address; the caller logs them
// redacted). `code` is the upstream's `code` when it is an HTTP status 400..599 (else
// 500), mapped as for a whole error response: overload (type overloaded_error, or 529)
// -> 503 overloaded_error; 4xx, 503 and 504 as they are, other 5xx -> 502; `type`
// invalid_request_error for 4xx, api_error for 5xx. nullopt for data that is not such an
// error (a chunk, "[DONE]", bytes that are not JSON).
std::optional<std::string> ReplaceUpstreamStreamError(std::string_view data,
                                                      std::string_view request_id);

}  // namespace kinference::api
