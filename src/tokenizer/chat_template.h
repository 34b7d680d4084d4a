// ChatTemplate: renders chat messages into the prompt text a model's chat template gives,
// for the templates it recognises, so the gateway can tokenize a chat request exactly as
// vLLM does (tokenizer/bpe.h) without a Jinja engine.
//
// Jinja subset supported: none in general. Parse() recognises templates by their text
// (whitespace-insensitive) and refuses every other one with kUnavailable, naming it, so
// the caller matches that model's requests with the approximate prefix index instead:
//   chatml  {% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' +
//           message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if
//           add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}
//           (the tiny model of scripts/vllm-env.sh; `tools` are passed to it by vLLM and
//           ignored by it, so they change nothing, as /tokenize confirms)
// Messages: role and string content; content given as an array of text parts is joined
// with "\n" (vLLM's "string" content format); other part types are refused.
//
// Thread-safety: immutable after Parse; Render is const.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace kinference::tokenizer {

struct ChatMessage {
  std::string role;
  std::string content;
};

class ChatTemplate {
 public:
  static Result<ChatTemplate> Parse(std::string_view jinja);
  std::string Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

}  // namespace kinference::tokenizer
