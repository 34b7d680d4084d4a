// POST /tokenize as vLLM serves it (vllm/entrypoints/serve/tokenize/protocol.py, 0.32):
// a completion-style request {model?, prompt: string} or a chat-style one {model?,
// messages: [...], add_generation_prompt (default true)}, both with add_special_tokens
// (accepted; the stand-in tokenizer, common/tokenizer.h, adds no special tokens) and
// return_token_strs (default false). Answer: {count, max_model_len, tokens: [int],
// token_strs: [string] | null}. Token ids and strings are the stand-in tokenizer's, not
// a model's (a token string is the token's bytes; vLLM shows its BPE symbols, e.g. "Ġ").
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace kinference::enginesim {

struct TokenizeRequest {
  std::string model;  // empty when absent
  std::string text;   // the prompt, or the messages rendered with the chat template
  bool return_token_strs = false;
};

// Errors: kInvalidArgument (vLLM's 400) for a body that is neither shape.
Result<TokenizeRequest> ParseTokenizeRequest(std::string_view body);

std::string FormatTokenizeResponse(const TokenizeRequest& request, int max_model_len);

}  // namespace kinference::enginesim
