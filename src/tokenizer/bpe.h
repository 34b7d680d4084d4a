// BpeTokenizer: a Hugging Face `tokenizer.json` byte-level BPE tokenizer (GPT-2, Qwen2,
// Llama 3 family) in process, so the gateway can compute a request's token ids exactly
// as the vLLM serving the model does, and from them the engine's block keys.
//
// Supported tokenizer.json (anything else is refused at load, naming the component):
//   normalizer     null, NFC (ICU), or a Sequence of those
//   pre_tokenizer  ByteLevel (use_regex: GPT-2's pattern; add_prefix_space), or a
//                  Sequence of Split {Regex pattern, behavior Isolated, invert false} and
//                  ByteLevel {use_regex false}; regexes run on PCRE2 in UTF + UCP mode
//                  (Unicode properties \p{L}, \p{N}, Unicode \s)
//   model          BPE with vocab, merges ("a b" strings or [a, b] pairs),
//                  ignore_merges, no dropout, no unk/byte_fallback needed (byte-level)
//   added_tokens   matched verbatim in the input before pre-tokenization (longest first,
//                  earliest first), as the chat path does for special tokens
//   post_processor ignored: vLLM tokenizes chat-templated prompts without adding special
//                  tokens (add_special_tokens=False), and completions prompts of these
//                  models get none (Qwen2/GPT-2 have no BOS).
// The model's tokenizer class can override tokenizer.json: transformers 5 (what vLLM 0.32
// loads) builds a Qwen2-family tokenizer (Qwen2Tokenizer) with NFC and Qwen2's split
// regex whatever tokenizer.json's normalizer and pre_tokenizer say (measured: the tiny
// model's tokenizer.json has GPT-2's ByteLevel pre-tokenizer, and vLLM's /tokenize
// splits " 0" as "Ġ" "0", which only Qwen2's `\p{N}` alternative does). FromModelDir
// reads config.json's model_type and applies that override for qwen2, qwen2_moe, qwen3
// and qwen3_moe.
// Errors: FromFile/FromJson/FromModelDir return kInvalidArgument. Encode never fails (every byte
// has a token in a byte-level vocabulary; a missing one is skipped and counted).
//
// Thread-safety: Encode is const and thread-safe (no shared cache).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace kinference::tokenizer {

class BpeTokenizer {
 public:
  static Result<std::unique_ptr<BpeTokenizer>> FromFile(const std::string& path);
  // `dir`/tokenizer.json with the tokenizer class's overrides for config.json's model_type.
  static Result<std::unique_ptr<BpeTokenizer>> FromModelDir(const std::string& dir);
  static Result<std::unique_ptr<BpeTokenizer>> FromJson(std::string_view json);
  ~BpeTokenizer();

  std::vector<uint32_t> Encode(std::string_view text) const;
  size_t vocab_size() const;

  struct Impl;  // opaque (bpe.cc)

 private:
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kinference::tokenizer
