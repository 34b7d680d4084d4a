// StreamAssembler: rebuilds the non-streamed OpenAI response a client asked for from the
// SSE chunks of the same request sent upstream as a stream. The gateway streams
// non-streamed client requests to OpenAI-shaped upstreams (local vLLM pools, OpenAI
// providers; GatewayConfig::upstream_streaming) so that it sees their first token (TTFT
// for the router's predictor and the stats), then answers the client with one object.
//
// Shapes (OpenAI API reference "The chat completion object" / "The chat completion chunk
// object" / "Completions"; vLLM vllm/entrypoints/openai/protocol.py ChatCompletionResponse,
// ChatCompletionStreamResponse, DeltaMessage, DeltaToolCall, CompletionResponse,
// CompletionStreamResponse):
//  - chat: chunks {id, object: "chat.completion.chunk", created, model,
//    system_fingerprint?, service_tier?, choices: [{index, delta: {role?, content?,
//    refusal?, reasoning_content? | reasoning?, tool_calls?: [{index, id?, type?,
//    function: {name?, arguments?}}]}, logprobs: {content: [...], refusal?: [...]} | null,
//    finish_reason, stop_reason? (vLLM)}], usage?} become {id, object: "chat.completion",
//    created, model, system_fingerprint?, service_tier?, choices (ordered by index):
//    [{index, message: {role, content, refusal?, reasoning_content? / reasoning?,
//    tool_calls?}, logprobs, finish_reason, stop_reason?}], usage?}. content is the
//    concatenated deltas, null when empty and tool calls or a refusal exist; tool calls
//    are accumulated per their `index` (id, type and function.name from the first delta
//    that has them, arguments concatenated); logprobs.content (and .refusal) are
//    concatenated, logprobs is null when no chunk carried any. id, created and model are
//    the first chunk's (created: now if no chunk had it).
//  - completions: chunks {id, object: "text_completion", created, model, choices:
//    [{index, text, logprobs: {tokens, token_logprobs, top_logprobs, text_offset} | null,
//    finish_reason, stop_reason?}], usage?} become one "text_completion" object with each
//    choice's text and logprobs arrays concatenated.
//  - usage: the last non-null usage seen (the final usage-only chunk with include_usage),
//    copied as sent (prompt_tokens_details.cached_tokens included).
// Fields a stream does not carry (vLLM's prompt_logprobs, kv_transfer_params, echoed
// prompts, token ids) cannot be rebuilt: StreamsFaithfully refuses such requests, and the
// gateway then forwards them as the client sent them.
//
// Errors (Result/Status, never thrown): an error event (`{"error": {...}}` or vLLM's
// `{"object": "error", ...}`), a chunk that is not a JSON object, or an incomplete stream
// make Finish return kUnavailable with the gateway's own message (for an error event
// "upstream stream reported an error"; the upstream's words are upstream_error(), for the
// log only); the gateway answers it 502 in the front's shape. A stream is complete only if at least
// one choice arrived and every choice has a non-null finish_reason, [DONE] or not (a truncated
// stream may still end with [DONE]); a stream without [DONE] must also have carried usage
// (include_usage is forced, so a clean stream has it; a provider that omits [DONE] but sends usage
// passes).
//
// Thread-safety: pure code; one assembler per request, not shared.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "api/openai/request.h"
#include "api/openai/response.h"
#include "common/status.h"

namespace kinference::api {

// Whether a request the client did not stream can be streamed upstream and its response
// rebuilt exactly: false for fields whose output only a non-streamed response carries
// (prompt_logprobs, kv_transfer_params, return_token_ids, echo, best_of > 1,
// use_beam_search) and when the client set stream_options (vLLM refuses them without
// stream; the client keeps that answer).
bool StreamsFaithfully(ApiKind kind, const boost::json::object& body);

// The upstream body that streams `request` ("stream": true, stream_options.include_usage);
// `model`, when set, replaces the body's model (a provider's name). Not copied.
std::string StreamedUpstreamBody(const ParsedRequest& request, std::string_view model = {});

class StreamAssembler {
 public:
  explicit StreamAssembler(ApiKind kind);
  ~StreamAssembler();
  StreamAssembler(StreamAssembler&&) noexcept;
  StreamAssembler& operator=(StreamAssembler&&) noexcept;

  // One SSE event's data, "[DONE]" included. Once failed, later events are ignored.
  void Add(std::string_view data);
  // The same, already parsed (api/openai/response.h); what it keeps is copied out.
  void Add(const StreamChunk& chunk);
  // An error event or a malformed chunk was seen.
  bool failed() const;
  // The message of the upstream's error event (empty when none): for the log, not the
  // client.
  const std::string& upstream_error() const;
  // The rebuilt response body (JSON), or kUnavailable (see Errors above).
  Result<std::string> Finish() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace kinference::api
