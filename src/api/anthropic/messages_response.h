// Anthropic Messages API, response side: an upstream OpenAI chat completion (whole, or
// streamed chunk by chunk) translated into an Anthropic message (whole, or its event
// stream).
//
// Mapping (Anthropic API reference "Messages" and "Streaming Messages"):
//   id "chatcmpl-X" -> "msg_X"; model: ResponseContext::model, the gateway model that
//     served the request (the client's, or the alternative a policy chose).
//   message.content -> [{"type":"text","text"}] (omitted when empty);
//   message.tool_calls -> [{"type":"tool_use","id","name","input"}], input parsed from the
//     arguments JSON text ({} when that is not a JSON object).
//   finish_reason -> stop_reason: stop -> end_turn, or stop_sequence when vLLM's choice
//     field `stop_reason` names the matched stop string (then stop_sequence = it);
//     length -> max_tokens; tool_calls/function_call -> tool_use; content_filter ->
//     refusal; anything else -> end_turn.
//   usage -> {input_tokens: prompt_tokens - cached_tokens, output_tokens:
//     completion_tokens, cache_read_input_tokens: prompt_tokens_details.cached_tokens,
//     cache_creation_input_tokens: 0}: Anthropic counts cached prompt tokens only in
//     cache_read_input_tokens, so the total is counted once.
// Stream: message_start (empty content; usage from the upstream's first chunk that carries
// it: it is held while chunks carry neither usage nor anything to emit, so a vLLM pool
// asked for stream_options.continuous_usage_stats (ParsedRequest::pool_continuous_usage)
// reports the prompt's tokens from its first chunk; an upstream without per-chunk usage
// (an OpenAI provider) leaves it 0 until message_delta; the final numbers come in
// message_delta, cumulative, which the SDKs apply),
// then per block content_block_start, content_block_delta (text_delta | input_json_delta),
// content_block_stop, with one `ping` after the first block starts, then message_delta
// (stop_reason, stop_sequence, cumulative usage) and message_stop once upstream sent
// [DONE] (or ended cleanly after a finish_reason). An upstream error, or an upstream
// stream that ends before finishing, becomes `event: error` with an Anthropic error body.
// Every event is emitted as its upstream chunk arrives; nothing is buffered whole.
//
// Thread-safety: StreamTranslator belongs to one stream; the functions are pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kinference::api::anthropic {

// What the response side needs from the request.
struct ResponseContext {
  std::string model;  // the gateway model that served: the client's, or a policy's alternative
  std::vector<std::string> stop_sequences;
};

struct TranslatedResponse {
  int status = 200;
  std::string body;
};

// A whole upstream response (status and body) -> the Anthropic response. Upstream
// errors become Anthropic errors (503 -> 529 overloaded_error); a 200 whose body is not
// a chat completion becomes 502 api_error.
TranslatedResponse TranslateResponse(int upstream_status, std::string_view body,
                                     const ResponseContext& ctx);

// OpenAI finish_reason (+ vLLM's stop_reason field) -> Anthropic stop_reason; sets
// `stop_sequence` when a stop string was hit.
std::string StopReason(std::string_view finish_reason, const std::optional<std::string>& vllm_stop,
                       std::optional<std::string>& stop_sequence);

class StreamTranslator {
 public:
  explicit StreamTranslator(ResponseContext ctx) : ctx_(std::move(ctx)) {}
  // The model message_start reports; set before the first OnData.
  void set_model(std::string model) { ctx_.model = std::move(model); }
  // One upstream SSE event's data (a chunk's JSON or "[DONE]") -> Anthropic SSE bytes
  // (possibly empty).
  std::string OnData(std::string_view data);
  // The upstream stream ended without error: closes the message, or an error event when
  // upstream never finished it.
  std::string OnEnd();
  // The stream ends in an error: `upstream_failure` (the upstream call failed mid-stream)
  // reports kUnavailable as api_error, a server-side failure; otherwise (the gateway ended
  // the request itself, e.g. a drain timeout) the status maps as for a whole response
  // (kUnavailable: overloaded_error, as the 529 a non-streamed request gets).
  std::string OnError(const Status& status, bool upstream_failure = true);
  // message_stop or an error event was emitted; later input is ignored.
  bool done() const { return done_; }
  bool failed() const { return failed_; }

 private:
  std::string Start();
  std::string OpenBlock(std::string block_json, bool tool, int tool_index);
  std::string CloseBlock();
  std::string Finish();
  std::string Error(std::string_view type, std::string_view message);

  ResponseContext ctx_;
  std::string upstream_id_;  // the first chunk's id (message id msg_<id>)
  bool started_ = false;
  bool pinged_ = false;
  bool done_ = false;
  bool failed_ = false;
  int next_block_ = 0;
  int open_block_ = -1;  // index of the open content block, -1 when none
  bool open_is_tool_ = false;
  int open_tool_index_ = -1;  // OpenAI tool_calls[].index of the open tool_use block
  std::optional<std::string> finish_reason_;
  std::optional<std::string> vllm_stop_;
  int prompt_tokens_ = 0, cached_tokens_ = 0, completion_tokens_ = 0;
};

}  // namespace kinference::api::anthropic
