// The OpenAI error body, {"error":{"message","type","param","code"}}, for a non-ok
// Status (OpenAI API reference "Error codes"; vLLM answers the same shape). `type` is
// OpenAiErrorType(code) and `code` the HTTP status as a number (HttpStatusFor), both from
// common/status.h; `param` is the Status's param, null when empty.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "common/status.h"

namespace kinference::api {

std::string OpenAiErrorBody(const Status& status);

// As above with `code` set to `http_status` (for statuses with no ErrorCode, e.g. 405).
std::string OpenAiErrorBody(const Status& status, int http_status);

}  // namespace kinference::api
