#include "tokenizer/chat_template.h"

#include <cctype>

namespace kinference::tokenizer {
namespace {

constexpr std::string_view kChatMl =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt "
    "%}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The template without whitespace, so layout differences do not matter.
std::string Squeeze(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out.push_back(c);
  return out;
}

}  // namespace

Result<ChatTemplate> ChatTemplate::Parse(std::string_view jinja) {
  ChatTemplate t;
  if (Squeeze(jinja) == Squeeze(kChatMl)) {
    t.name_ = "chatml";
    return t;
  }
  return Status(ErrorCode::kUnavailable, "chat template not supported (known: chatml); " +
                                             std::to_string(jinja.size()) + "-character template");
}

std::string ChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt) const {
  std::string out;
  for (const auto& m : messages) {
    out += "<|im_start|>";
    out += m.role;
    out += '\n';
    out += m.content;
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace kinference::tokenizer
