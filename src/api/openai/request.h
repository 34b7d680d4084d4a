// OpenAI request parsing (POST /v1/chat/completions and /v1/completions): what the
// routing core needs to know about a request (model, stream flag, the text used for
// prefix features) and the body sent upstream.
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
  int max_tokens = 0;       // max_completion_tokens, else max_tokens; 0 if absent
  std::string prompt_text;  // the prefix-stable rendering (see above)
  boost::json::object body;
  // Who sent it (gateway/front/tenants.h); set by the front after authentication.
  std::string tenant = "default";
};

Result<ParsedRequest> ParseRequest(ApiKind kind, std::string_view body);

// role + "\n" + content + "\n" for each message. kInvalidArgument (param "messages")
// when a message is not an object.
Result<std::string> RenderChatText(const boost::json::value& messages);

// The body sent upstream. Streaming requests get "stream_options":{"include_usage":true}
// so the gateway always learns token usage; others are forwarded unchanged.
std::string UpstreamBody(const ParsedRequest& request);

// The text a chat request leaves cached on its endpoint once answered: its rendering
// followed by the reply as one more assistant message, rendered as RenderChatText does
// (what the conversation's next turn starts with; see Router::OnCompletionText).
std::string RenderWithReply(std::string_view prompt_text, std::string_view reply);

}  // namespace kinference::api
