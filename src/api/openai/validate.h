// Validation of an OpenAI request body's fields to the ranges and enums the OpenAI API
// reference documents (platform.openai.com/docs/api-reference/chat/create and
// /completions/create), so a request a real OpenAI endpoint would refuse gets a 400 here
// that names the field and the problem, instead of reaching vLLM (which accepts some of
// them, e.g. temperature 9) or failing there with a less clear message.
//
// Checked (absent or null fields are fine):
//   temperature        number, 0..2
//   top_p              number, 0..1
//   presence_penalty   number, -2..2
//   frequency_penalty  number, -2..2
//   n                  integer >= 1
//   max_tokens, max_completion_tokens   integer >= 1 (completions: >= 0)
//   top_logprobs       integer 0..20 (chat)
//   logprobs           boolean (chat); integer 0..5 (completions)
//   messages[i]        object with role system | developer | user | assistant | tool |
//                      function (chat)
// Errors: kInvalidArgument with `param` set to the field ("messages[2].role").
//
// Thread-safety: pure function.
#pragma once

#include <boost/json/object.hpp>

#include "api/openai/request.h"
#include "common/status.h"

namespace kinference::api {

Status ValidateOpenAiFields(ApiKind kind, const boost::json::object& body);

// A request's Content-Type (empty: absent) for a JSON API: absent, application/json or a
// +json type (any parameters) is fine; anything else (e.g. curl -d's
// application/x-www-form-urlencoded) is kInvalidArgument naming the type.
Status CheckJsonContentType(std::string_view content_type);

}  // namespace kinference::api
