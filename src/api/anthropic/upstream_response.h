// Anthropic as an upstream provider, response side: Anthropic Messages responses (whole,
// or streamed event by event) rewritten as OpenAI chat completions / chunks, so the
// gateway's request path (gateway/exchange/exchange.h) treats every upstream as OpenAI.
//
// Whole message (Anthropic API reference "Messages") -> chat.completion:
//   text blocks -> message.content (joined); tool_use {id,name,input} -> tool_calls
//   [{id, type:"function", function:{name, arguments: JSON text of input}}]; thinking
//   blocks -> message.reasoning_content (vLLM's field); other blocks are dropped.
//   stop_reason -> finish_reason: end_turn, stop_sequence, pause_turn -> stop;
//   max_tokens, model_context_window_exceeded -> length; tool_use -> tool_calls;
//   refusal -> content_filter.
//   usage: prompt_tokens = input_tokens + cache_read_input_tokens +
//   cache_creation_input_tokens (Anthropic's input_tokens excludes both cache counts),
//   prompt_tokens_details.cached_tokens = cache_read_input_tokens, completion_tokens =
//   output_tokens.
// Errors {"type":"error","error":{"type","message"}} -> {"error":{"message","type",
// "param":null,"code"}} with the same status, except 529 (overloaded_error) -> 503.
//
// Stream ("Streaming Messages"): message_start -> a role chunk; content_block_start of a
// tool_use -> a tool_calls chunk {index, id, type, function:{name, arguments:""}};
// content_block_delta text_delta -> delta.content, input_json_delta -> tool_calls
// arguments, thinking_delta -> delta.reasoning_content (signature_delta, citations_delta
// dropped); message_delta -> a finish_reason chunk (usage is cumulative there and
// overrides message_start's); message_stop -> the usage chunk (choices: []) and [DONE];
// ping, content_block_stop and unknown events -> nothing; `error` -> data: {"error":...}.
// A stream that ends before message_stop yields an error event (OnEnd). Error events
// carry code 502 (503 for overloaded_error), as the same failure unstreamed. Each event is
// translated as it arrives; nothing is buffered.
//
// Thread-safety: MessagesStreamDecoder belongs to one stream; the functions are pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/sse.h"

namespace kinference::api::anthropic {

struct OpenAiResponse {
  int status = 200;
  std::string body;
};

// Anthropic stop_reason -> OpenAI finish_reason (see above; unknown -> "stop").
std::string FinishReason(std::string_view stop_reason);

// A whole upstream response -> the OpenAI response. A 200 whose body is not a message
// becomes 502. `created`: Unix seconds for the chat.completion.
OpenAiResponse MessagesResponseToOpenAi(int status, std::string_view body, int64_t created);

class MessagesStreamDecoder {
 public:
  explicit MessagesStreamDecoder(int64_t created) : created_(created) {}
  // One upstream Anthropic event -> the OpenAI SSE events it becomes (possibly none).
  std::vector<api::SseEvent> OnEvent(const api::SseEvent& event);
  // The upstream stream ended cleanly: an error event unless message_stop was seen.
  std::vector<api::SseEvent> OnEnd();
  bool finished() const { return finished_; }  // message_stop seen
  bool failed() const { return failed_; }      // an error event was produced
  // usage.cache_creation_input_tokens so far (message_start, overridden by message_delta):
  // part of the translated prompt_tokens that OpenAI's usage shape cannot name (billing).
  int64_t cache_creation_tokens() const { return cache_creation_; }

 private:
  std::string Chunk(std::string delta_json, const char* finish_reason) const;
  api::SseEvent Error(std::string_view type, std::string_view message);

  int64_t created_;
  std::string id_ = "msg_kinference";
  std::string model_;
  std::map<int64_t, int> tool_index_;  // Anthropic block index -> OpenAI tool_calls index
  int64_t input_ = 0, cache_read_ = 0, cache_creation_ = 0, output_ = 0;
  bool finished_ = false;
  bool failed_ = false;
};

}  // namespace kinference::api::anthropic
