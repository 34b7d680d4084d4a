// Anthropic Messages API (POST /v1/messages) in front of the gateway, request side: the
// translation of a Messages request into the equivalent OpenAI chat completion for the
// local vLLM pool, and Anthropic's error shape.
//
// Field mapping (Anthropic API reference "Messages" -> OpenAI "Chat Completions", as vLLM
// serves it; the full table is in docs/anthropic.md):
//   system (string | text blocks)        -> a leading {"role":"system"} message
//   messages[].content string            -> content string
//   text blocks                          -> content parts [{"type":"text","text"}]
//   assistant tool_use blocks            -> tool_calls [{id,type:"function",function:
//                                           {name, arguments: JSON text of input}}]
//   user tool_result blocks              -> {"role":"tool","tool_call_id","content"}
//                                           messages, placed before the user's text
//   tools [{name,description,input_schema}] -> [{"type":"function","function":
//                                           {name,description,parameters}}]
//   tool_choice auto|any|tool|none       -> "auto" | "required" | {"type":"function",
//                                           "function":{"name"}} | "none";
//                                           disable_parallel_tool_use -> parallel_tool_calls
//   stop_sequences -> stop; max_tokens, temperature, top_p, stream as is; top_k and
//   ignore_eos (vLLM extra parameters) as is; metadata.user_id -> user. Streaming requests ask
//   upstream for usage (stream_options.include_usage) because Anthropic streams always report it.
//   user document blocks with a text or content source -> a text part (title, context,
//   text); `messages` that is not an array -> 400 "Input should be a valid list".
// Checked as the Messages API checks them (400): tool_choice any/tool without tools or
// naming an unknown tool; thinking (budget_tokens >= 1024 and < max_tokens for
// "enabled"; "disabled" and "adaptive" accepted), which is not forwarded (vLLM has no
// per-request thinking budget). Streams set ParsedRequest::pool_continuous_usage.
// Ignored: service_tier, container, mcp_servers (no local equivalent).
// Refused (400): image blocks, documents with a base64 (PDF), url or file source, server
// tools (types other than "custom").
// Dropped: thinking / redacted_thinking blocks of earlier assistant turns.
//
// Errors: Status kInvalidArgument (400) naming the field in Anthropic's style
// ("messages.0.content.1: ..."). Units: tokens for max_tokens.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai/request.h"
#include "common/status.h"

namespace kinference::api::anthropic {

// What the response side needs to know about the request.
struct MessagesRequest {
  std::string model;
  bool stream = false;
  int max_tokens = 0;
  std::vector<std::string> stop_sequences;
  boost::json::object openai_body;  // the equivalent chat completion request
};

// Translates a /v1/messages body. max_tokens is required (Anthropic's API requires it).
Result<MessagesRequest> TranslateRequest(std::string_view body);
Result<MessagesRequest> TranslateRequest(const boost::json::object& body);

// The /v1/messages front's one parse of a client body (api/openai/request.h).
struct ParsedMessages {
  // request.body: the equivalent chat completion, read as ParseRequest reads one;
  // request.original: the client's Messages body as parsed.
  ParsedRequest request;
  std::vector<std::string> stop_sequences;  // for the response side (ResponseContext)
  // Ok, or why the body has no OpenAI translation (image or document blocks, server
  // tools, ...): it may then go to Anthropic providers only, natively, and this is the
  // 400 otherwise; `request` then holds its routing input (model, stream, max_tokens and
  // the rendering of its messages' text).
  Status untranslatable;
};

// Parses once and translates. Errors: the body is not a JSON object, or it neither
// translates nor yields routing input (the translation's error), or its translation is
// not a valid chat completion.
Result<ParsedMessages> ParseMessages(std::string_view body);

// Anthropic error `type` for an error code, per the Anthropic API reference "Errors":
// 400 invalid_request_error, 401 authentication_error, 403 permission_error,
// 404 not_found_error, 413 request_too_large, 429 rate_limit_error, 500 api_error,
// 504 timeout_error, 529 overloaded_error (our kUnavailable: no capacity / no healthy
// endpoint).
const char* ErrorType(ErrorCode code);
// The HTTP status Anthropic uses for an error code (kUnavailable -> 529).
int ErrorHttpStatus(ErrorCode code);
// The Anthropic error type for an HTTP status relayed from upstream (503 -> overloaded).
const char* ErrorTypeForHttpStatus(int status);
// Anthropic status code for an upstream HTTP error status (503 -> 529, others as is).
int AnthropicStatusForUpstream(int status);
// {"type":"error","error":{"type","message"}}.
std::string ErrorBody(std::string_view type, std::string_view message);
std::string ErrorBody(const Status& status);

// A provider's Anthropic stream `error` event data ({"type":"error","error":{...}}): the
// gateway's own error event data for the client, keeping the provider's error `type` when
// it is one the Anthropic API reference "Errors" documents (invalid_request_error,
// authentication_error, billing_error, permission_error, not_found_error,
// request_too_large, rate_limit_error, api_error, timeout_error, overloaded_error; any
// other becomes api_error) and saying what happened with the request id, never in the
// provider's words (they may carry a key or an internal address; the caller logs them
// redacted). nullopt for data that is not such an error object.
std::optional<std::string> ReplaceStreamError(std::string_view data, std::string_view request_id);

}  // namespace kinference::api::anthropic
