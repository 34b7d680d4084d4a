#include "gateway/exchange/prompt_keys.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/tokenizer.h"
#include "engine/chat_template.h"

namespace kinference::gateway {
namespace json = boost::json;

namespace {

std::optional<std::string> ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// chat_template.jinja, else tokenizer_config.json's "chat_template" string.
Result<std::string> ReadChatTemplate(const std::filesystem::path& dir) {
  if (auto t = ReadFile(dir / "chat_template.jinja")) return *t;
  if (auto cfg = ReadFile(dir / "tokenizer_config.json")) {
    boost::system::error_code ec;
    json::value v = json::parse(*cfg, ec);
    if (!ec && v.is_object()) {
      if (const json::value* t = v.as_object().if_contains("chat_template"); t && t->is_string())
        return std::string(t->as_string());
    }
  }
  return Status(ErrorCode::kUnavailable, "no chat template in " + dir.string());
}

Status Unsupported(const std::string& what) {
  return InvalidArgument("not tokenized exactly: " + what);
}

// A message's content: a string, or the `text` of text parts joined with `sep`.
Result<std::string> Content(const json::value& c, std::string_view sep) {
  if (c.is_string()) return std::string(c.as_string());
  if (!c.is_array()) return Unsupported("message content that is not a string or parts");
  std::string out;
  bool first = true;
  for (const auto& part : c.as_array()) {
    const json::object* o = part.if_object();
    const json::value* type = o ? o->if_contains("type") : nullptr;
    const json::value* text = o ? o->if_contains("text") : nullptr;
    if (!type || !type->is_string() || type->as_string() != "text" || !text || !text->is_string())
      return Unsupported("content parts other than text");
    if (!first) out += sep;
    out += std::string_view(text->as_string());
    first = false;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<PromptKeys>> PromptKeys::Load(const std::string& tokenizer,
                                                     const std::string& none_hash_seed) {
  std::unique_ptr<PromptKeys> p(new PromptKeys());
  p->name_ = tokenizer;
  p->hasher_ = std::make_unique<kv::BlockHasher>(none_hash_seed);
  if (tokenizer == "engine-sim") return p;
  auto bpe = tokenizer::BpeTokenizer::FromModelDir(tokenizer);
  if (!bpe.ok()) return bpe.status();
  p->bpe_ = std::move(*bpe);
  auto text = ReadChatTemplate(tokenizer);
  auto tmpl = text.ok() ? tokenizer::ChatTemplate::Parse(*text)
                        : Result<tokenizer::ChatTemplate>(text.status());
  if (tmpl.ok()) {
    p->chat_template_ = std::move(*tmpl);
  } else {
    p->template_error_ = tmpl.status().message();
    spdlog::warn("kv_events tokenizer {}: {}; chat requests use the approximate prefix index",
                 tokenizer, p->template_error_);
  }
  return p;
}

Result<std::vector<uint32_t>> PromptKeys::TokenIds(const api::ParsedRequest& r) const {
  if (r.kind == api::ApiKind::kCompletions) {
    const json::value* p = r.body.if_contains("prompt");
    if (p && p->is_array() && p->as_array().size() == 1 && p->as_array()[0].is_string())
      p = &p->as_array()[0];
    if (p && p->is_string()) {
      std::string_view text = p->as_string();
      return bpe_ ? bpe_->Encode(text) : Tokenize(text);
    }
    if (p && p->is_array() && !p->as_array().empty()) {
      std::vector<uint32_t> ids;
      for (const auto& v : p->as_array()) {
        if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() > UINT32_MAX)
          return Unsupported("prompt");
        ids.push_back(static_cast<uint32_t>(v.as_int64()));
      }
      return ids;
    }
    return Unsupported("prompt");
  }
  if (bpe_ && !chat_template_) return Status(ErrorCode::kUnavailable, template_error_);
  const json::value* m = r.body.if_contains("messages");
  if (!m || !m->is_array()) return Unsupported("messages");
  std::vector<tokenizer::ChatMessage> messages;
  for (const auto& mv : m->as_array()) {
    const json::object* o = mv.if_object();
    const json::value* role = o ? o->if_contains("role") : nullptr;
    const json::value* content = o ? o->if_contains("content") : nullptr;
    if (!role || !role->is_string() || !content) return Unsupported("message");
    auto text = Content(*content, bpe_ ? "\n" : "");
    if (!text.ok()) return text.status();
    messages.push_back({std::string(role->as_string()), std::move(*text)});
  }
  if (bpe_) return bpe_->Encode(chat_template_->Render(messages, /*add_generation_prompt=*/true));
  engine::ChatMessages chat;
  for (auto& msg : messages) chat.emplace_back(std::move(msg.role), std::move(msg.content));
  return Tokenize(engine::ApplyChatTemplate(chat, /*add_generation_prompt=*/true));
}

Result<PromptKeys::Keys> PromptKeys::BlockKeys(const api::ParsedRequest& r, int block_size) const {
  std::string_view salt;
  if (const json::value* s = r.body.if_contains("cache_salt"); s && !s->is_null()) {
    if (!s->is_string()) return Unsupported("cache_salt");
    salt = s->as_string();
  }
  auto ids = TokenIds(r);
  if (!ids.ok()) return ids.status();
  Keys k;
  k.prompt_tokens = static_cast<int>(ids->size());
  k.keys = hasher_->BlockKeys(*ids, block_size, salt);
  return k;
}

}  // namespace kinference::gateway
