// Anthropic as an upstream provider, request side: an OpenAI chat completion request
// (what the gateway routes) rewritten as an Anthropic Messages request for
// POST {base_url}/v1/messages, and the client's own Messages body for native
// passthrough (the /v1/messages front to an Anthropic provider).
//
// Mapping (OpenAI API reference "Chat Completions" -> Anthropic API reference
// "Messages"; the full table is in docs/anthropic.md, "Anthropic as a provider"):
//   system / developer messages     -> `system` (a string, or text blocks when several)
//   user content string | parts     -> content string | text blocks; image_url parts ->
//                                      image blocks (data: URLs as base64, others as url)
//   assistant content + tool_calls  -> text blocks + tool_use {id, name, input: the
//                                      parsed arguments JSON object}
//   tool {tool_call_id, content}    -> a user turn's tool_result {tool_use_id, content}
//   consecutive same-role turns are merged into one (tool results first, as Anthropic
//   requires them to lead the user turn)
//   tools [{type:function, function:{name, description, parameters}}]
//                                   -> [{name, description, input_schema}]
//   tool_choice auto|required|none|{function:{name}} -> {type: auto|any|none|tool,name};
//   parallel_tool_calls: false      -> tool_choice.disable_parallel_tool_use: true
//   stop (string | array)           -> stop_sequences
//   max_completion_tokens, else max_tokens, else `default_max_tokens` -> max_tokens
//   temperature (clamped to Anthropic's 0..1), top_p, top_k, stream as is
//   user                            -> metadata.user_id
// Ignored (no Anthropic equivalent): n (only 1 accepted), presence/frequency_penalty,
// logit_bias, logprobs, seed, response_format, stream_options (Anthropic streams always
// report usage), reasoning_effort, service_tier. Refused (400): audio/file parts, the
// deprecated `function` role, tool_calls whose arguments are not a JSON object.
//
// Errors: Status kInvalidArgument with `param` naming the field (the gateway answers 400
// in the client's error shape). Units: tokens.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kinference::api::anthropic {

// Anthropic's current API version (Anthropic API reference "Versioning": the header
// `anthropic-version: 2023-06-01` is required on every request).
inline constexpr const char* kDefaultAnthropicVersion = "2023-06-01";

// max_tokens when an OpenAI request sets none (Anthropic requires it; OpenAI and vLLM
// default to "as much as fits"). 4096 tokens is the largest output every Claude model
// accepts (Claude 3 Haiku's limit; Anthropic "Models overview"), so it never gives a 400.
inline constexpr int kDefaultMaxTokens = 4096;

struct UpstreamRequestOptions {
  std::string model;  // the provider's model name
  int default_max_tokens = kDefaultMaxTokens;
};

// The Messages request body for an OpenAI chat completion request.
Result<std::string> BuildMessagesRequest(const boost::json::object& chat,
                                         const UpstreamRequestOptions& options);

// The client's own Anthropic request, kept for native passthrough: its body is the
// parsed one, ParsedRequest::original (api/openai/request.h).
struct NativeRequest {
  std::string anthropic_version;  // the client's header; empty: the provider's own
  std::string anthropic_beta;     // the client's header; forwarded when set
  // Why the request has no OpenAI translation (image or document blocks, server tools,
  // ...); not ok: it may go to Anthropic providers only, and this is the 400 otherwise.
  Status untranslatable;
};

// `body` (the client's, as parsed) serialised with its top-level "model" replaced by
// `model`, without copying it. Errors: kInvalidArgument when `body` is not a JSON object.
Result<std::string> NativeRequestBody(const boost::json::value& body, std::string_view model);

}  // namespace kinference::api::anthropic
