#include "engine/chat_template.h"

namespace kinference::engine {

std::string ApplyChatTemplate(const ChatMessages& messages, bool add_generation_prompt) {
  std::string out;
  for (const auto& [role, content] : messages) {
    out += "<|im_start|>";
    out += role;
    out += '\n';
    out += content;
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace kinference::engine
