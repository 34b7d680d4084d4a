// The one request object, and OpenAI request parsing (POST /v1/chat/completions and
// /v1/completions). A client's body is parsed once, by its front's codec (here, or
// api/anthropic/messages_request.h for /v1/messages), into a ParsedRequest that every
// later stage reads: tenant identification writes its tenant; the policy taggers scan
// its body (the client's own: `original` when set); policies read model, stream, tools
// and prompt size; the router's features are its rendering; the upstream body is
// serialised from it (UpstreamBody, StreamedUpstreamBody, or the client's own Messages
// body for an Anthropic provider).
//
// Prefix rendering: a chat request renders as role + "\n" + content + "\n" per message,
// in order, so turn k's rendering is a prefix of turn k+1's (multi-turn conversations
// share prefixes in the router's index the way they share KV blocks in vLLM's prefix
// cache). Content given as an array of parts contributes the `text` of its text parts.
// A completions request renders as its prompt (first element when a list of strings).
//
// Errors (Result): kInvalidArgument for malformed JSON or a malformed field (param set),
// kNotFound with param "model" when `model` is missing (the gateway answers 404 for a
// missing or unknown model). Units: characters (bytes of UTF-8), tokens.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kinference::api {

enum class ApiKind { kChatCompletions, kCompletions };

struct ParsedRequest {
  ApiKind kind = ApiKind::kChatCompletions;
  std::string model;
  bool stream = false;
  // The client set stream_options.include_usage (only meaningful when streaming).
  bool client_wants_usage = false;
  // Ask a local vLLM pool for usage on every chunk (stream_options.continuous_usage_stats,
  // a vLLM extension; its first chunk then carries prompt_tokens). Set by the /v1/messages
  // front for message_start's input_tokens. Never sent to providers (OpenAI refuses
  // arguments it does not know).
  bool pool_continuous_usage = false;
  int max_tokens = 0;       // max_completion_tokens, else max_tokens; 0 if absent
  std::string prompt_text;  // the prefix-stable rendering (see above)
  // The OpenAI request routed and sent upstream: the client's body, or for /v1/messages
  // its translation.
  boost::json::object body;
  // The client's own body as parsed when `body` is a translation of it (/v1/messages;
  // an object); null otherwise.
  boost::json::value original;
  // Who sent it (gateway/front/tenants.h); set by the front after authentication.
  std::string tenant = "default";
  // The request's id (x-request-id: the client's when valid, else generated; set by the
  // gateway front): returned to the client, forwarded upstream, in /debug/decisions, the
  // access log and usage records.
  std::string request_id;
};

// Parses `body` (JSON, nesting up to kMaxJsonDepth) and reads it as below.
Result<ParsedRequest> ParseRequest(ApiKind kind, std::string_view body);
// Reads an already parsed body (kept as ParsedRequest::body): model, stream,
// stream_options.include_usage, max tokens, and the rendering of messages / prompt.
Result<ParsedRequest> ParseRequest(ApiKind kind, boost::json::object body);

// role + "\n" + content + "\n" for each message. kInvalidArgument (param "messages")
// when a message is not an object.
Result<std::string> RenderChatText(const boost::json::value& messages);

// The body sent upstream. Streaming requests get "stream_options":{"include_usage":true}
// so the gateway always learns token usage (and "continuous_usage_stats":true for a local
// pool when pool_continuous_usage is set); others are forwarded unchanged. `model`, when
// set, replaces the body's model (a provider's own name for it: the body goes to a
// provider). The body is not copied (SerializeWith).
std::string UpstreamBody(const ParsedRequest& request, std::string_view model = {});

// The text a chat request leaves cached on its endpoint once answered: its rendering
// followed by the reply as one more assistant message, rendered as RenderChatText does
// (what the conversation's next turn starts with; see Router::OnCompletionText).
std::string RenderWithReply(std::string_view prompt_text, std::string_view reply);

}  // namespace kinference::api
