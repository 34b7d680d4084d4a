// Chat template: renders chat messages into the prompt text the engine tokenizes.
//
// ChatML (the format of Qwen and many other chat models' templates): each message is
// `<|im_start|>{role}\n{content}<|im_end|>\n`, followed by `<|im_start|>assistant\n` when
// add_generation_prompt is set. Because the rendering of messages[0..k] is a prefix of
// the rendering of messages[0..k+1], a multi-turn conversation's prompts share text (and,
// with common/tokenizer.h, token) prefixes, as they do on vLLM.
//
// Thread-safety: pure function; safe from any thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kinference::engine {

// (role, content) pairs, e.g. {"system", "..."}, {"user", "..."}.
using ChatMessages = std::vector<std::pair<std::string, std::string>>;

std::string ApplyChatTemplate(const ChatMessages& messages, bool add_generation_prompt);

}  // namespace kinference::engine
