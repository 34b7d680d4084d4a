// engine-sim's OpenAI-compatible surface as vLLM serves it: parsing of the request
// bodies of POST /v1/completions and /v1/chat/completions, and the JSON of responses
// and streamed chunks. Pure functions (no I/O), so they are unit-tested directly.
//
// Field names and shapes follow the OpenAI API reference (Completions, Chat
// Completions, streaming) and vLLM's openai/protocol.py (ignore_eos, the error object
// {"error":{"message","type","param","code"}} with type "BadRequestError" /
// "NotFoundError", stop_reason, prompt_tokens_details.cached_tokens).
//
// Units: token counts. Errors: Status kInvalidArgument (HTTP 400) with `param` naming
// the field, kNotFound (404) for an unknown model.
//
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/tokenizer.h"
#include "engine/chat_template.h"

namespace kinference::enginesim {

struct GenerationRequest {
  bool chat = false;
  std::string model;  // empty when the field was absent (vLLM then uses its model)
  std::vector<TokenId> prompt;
  std::optional<int> max_tokens;  // max_completion_tokens, else max_tokens, if given
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // stream_options.continuous_usage_stats (vLLM): with include_usage, every chunk carries
  // the usage so far (the role chunk: prompt_tokens, completion_tokens 0).
  bool continuous_usage = false;
  bool ignore_eos = false;  // vLLM extra sampling parameter
  std::optional<uint64_t> seed;
};

// A request body as a JSON object. Errors: kInvalidArgument with param "body" (vLLM's
// validation-error location) when it is not JSON or not an object.
Result<boost::json::object> ParseObject(std::string_view body);
// `messages` of a chat request (null when absent): role and text of each; content a
// string, null, or a list of {"type":"text","text":...} parts. Errors: kInvalidArgument.
Result<engine::ChatMessages> ParseMessages(const boost::json::value* messages);

// Parses a /v1/completions body. `prompt`: a string, a list of token ids, a list with
// one string, or a list with one list of token ids (batched prompts are refused).
Result<GenerationRequest> ParseCompletionRequest(std::string_view body);
// Parses a /v1/chat/completions body. `messages[].content`: a string, null, or a list of
// {"type":"text","text":...} parts; rendered with the ChatML template and a generation
// prompt (engine/chat_template.h), then tokenized.
Result<GenerationRequest> ParseChatRequest(std::string_view body);
// As above for a body already parsed (the translation of a /v1/messages body).
Result<GenerationRequest> ParseChatRequest(const boost::json::object& body);

// Checks the model name and the context length, and fills in the default max_tokens:
// 16 for completions (OpenAI's default), max_model_len - prompt tokens for chat (vLLM's).
// Errors: kNotFound when `model` is set and differs from `served_model`; kInvalidArgument
// when prompt + max_tokens exceed max_model_len (vLLM's message).
Status ResolveRequest(GenerationRequest& request, const std::string& served_model,
                      int max_model_len);

// vLLM's error body: {"error":{"message","type","param","code"}}.
std::string VllmErrorBody(const Status& status);

// What every response or chunk of one request repeats.
struct ResponseMeta {
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
  bool chat = false;
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
  // Prompt tokens this request computed and wrote to the prefix cache (vLLM's
  // num_cache_creation_tokens: the prompt's full blocks less those it found cached).
  int created_cache_tokens = 0;
};

// The fields below follow vLLM 0.32's responses key for key, with null where vLLM sends
// null for a request without logprobs, tools, reasoning or KV transfer (measured against
// vLLM by tests/realvllm/test_50_conformance.py). Usage: prompt_tokens, total_tokens,
// completion_tokens, prompt_tokens_details {cached_tokens, created_cache_tokens (chat;
// null in a whole completions response, absent from a streamed one), multimodal_tokens
// (null; whole responses only)}, completion_tokens_details (null; whole responses only).
// vLLM writes system_fingerprint ("vllm-<version>-<hash>"); engine-sim writes
// kSystemFingerprint.
inline constexpr const char* kSystemFingerprint = "kinference-engine-sim";

// Non-streaming response ("text_completion" / "chat.completion").
std::string FormatResponse(const ResponseMeta& meta, std::string_view text,
                           std::string_view finish_reason, const Usage& usage);
// Streaming chunks (the JSON after "data: "). The first chat chunk carries
// delta {"role":"assistant","content":""}.
std::string FormatRoleChunk(const ResponseMeta& meta);
// One token's text; `finish_reason` set on the last chunk with content. `last`: no usage
// chunk follows, so this one carries system_fingerprint (as vLLM's last chunk does).
std::string FormatTokenChunk(const ResponseMeta& meta, std::string_view text,
                             std::optional<std::string_view> finish_reason, bool last = false);
// `chunk` (a chunk's JSON) with vLLM's continuous usage: {prompt_tokens, total_tokens,
// completion_tokens}.
std::string WithContinuousUsage(const std::string& chunk, int prompt_tokens, int completion_tokens);
// The stream_options.include_usage chunk: "choices": [] and usage.
std::string FormatUsageChunk(const ResponseMeta& meta, const Usage& usage);

}  // namespace kinference::enginesim
