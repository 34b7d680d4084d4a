// PromptKeys: a request's engine block keys, the keys vLLM's KV events name for the blocks
// its prompt fills (kv/block_hash.h), so the router can match it against the precise
// prefix index of endpoints whose KV-event feed is live (docs/kv-events.md).
//
// Token ids are those the served model's vLLM computes:
//   "engine-sim"  engine-sim's stand-in tokenizer (common/tokenizer.h) over its ChatML
//                 rendering (engine/chat_template.h); text parts of a message's content
//                 concatenated, as engine-sim does;
//   a folder      a Hugging Face model folder: tokenizer/bpe.h (tokenizer.json with the
//                 tokenizer class's overrides) and tokenizer/chat_template.h
//                 (chat_template.jinja, else tokenizer_config.json's chat_template);
//                 text parts joined with "\n" (vLLM's "string" content format). A
//                 template it cannot render leaves chat requests to the approximate
//                 index (completions are still tokenized); Load logs that once.
// Completions: a string prompt (or a one-string list) is tokenized as is (no special
// tokens added: Qwen2/GPT-2 add none); token-id prompts are used as they are.
// A request's `cache_salt` enters block 0's hash as in vLLM. Requests that cannot be
// tokenized exactly (other content parts, batched prompts, a non-string cache_salt) get
// no keys, and the approximate index answers for them.
//
// Cost: tokenizing plus hashing, about 50 us for a 1k-token prompt (docs/kv-events.md).
// Errors: Load returns kInvalidArgument when the folder cannot be read; Keys returns
// kUnavailable (template not renderable) or kInvalidArgument (a shape it does not tokenize).
// Thread-safety: immutable after Load; Keys is const.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/openai/request.h"
#include "common/status.h"
#include "kv/block_hash.h"
#include "tokenizer/bpe.h"
#include "tokenizer/chat_template.h"

namespace kinference::gateway {

class PromptKeys {
 public:
  static Result<std::unique_ptr<PromptKeys>> Load(const std::string& tokenizer,
                                                  const std::string& none_hash_seed);

  // The prompt's token ids as the served model's vLLM computes them.
  Result<std::vector<uint32_t>> TokenIds(const api::ParsedRequest& request) const;
  // Block keys of the prompt's full blocks of `block_size` tokens, and its token count.
  struct Keys {
    std::vector<uint64_t> keys;
    int prompt_tokens = 0;
  };
  Result<Keys> BlockKeys(const api::ParsedRequest& request, int block_size) const;

  const std::string& name() const { return name_; }

 private:
  PromptKeys() = default;
  std::string name_;
  std::unique_ptr<tokenizer::BpeTokenizer> bpe_;          // null: engine-sim's tokenizer
  std::optional<tokenizer::ChatTemplate> chat_template_;  // bpe_ set and template renderable
  std::string template_error_;
  std::unique_ptr<kv::BlockHasher> hasher_;
};

}  // namespace kinference::gateway
