#include "enginesim/tokenize_api.h"

#include <boost/json.hpp>

#include "common/tokenizer.h"
#include "engine/chat_template.h"
#include "enginesim/openai_api.h"

namespace kinference::enginesim {

namespace json = boost::json;

namespace {

Result<bool> Flag(const json::object& o, const char* name, bool fallback) {
  const json::value* v = o.if_contains(name);
  if (!v || v->is_null()) return fallback;
  if (!v->is_bool()) return InvalidArgument(std::string(name) + " must be a boolean", name);
  return v->as_bool();
}

}  // namespace

Result<TokenizeRequest> ParseTokenizeRequest(std::string_view body) {
  auto obj = ParseObject(body);
  if (!obj.ok()) return obj.status();
  const json::object& o = *obj;
  TokenizeRequest r;
  if (const json::value* m = o.if_contains("model"); m && !m->is_null()) {
    if (!m->is_string()) return InvalidArgument("model must be a string", "model");
    r.model = std::string(m->as_string());
  }
  for (const char* name : {"add_special_tokens", "return_token_strs"}) {
    auto f = Flag(o, name, false);
    if (!f.ok()) return f.status();
    if (std::string_view(name) == "return_token_strs") r.return_token_strs = *f;
  }
  const json::value* prompt = o.if_contains("prompt");
  const json::value* messages = o.if_contains("messages");
  if (prompt && !prompt->is_null()) {
    if (!prompt->is_string()) return InvalidArgument("prompt must be a string", "prompt");
    r.text = std::string(prompt->as_string());
  } else if (messages && !messages->is_null()) {
    auto parsed = ParseMessages(messages);
    if (!parsed.ok()) return parsed.status();
    auto add = Flag(o, "add_generation_prompt", true);
    if (!add.ok()) return add.status();
    r.text = engine::ApplyChatTemplate(*parsed, *add);
  } else {
    return InvalidArgument("either prompt or messages is required", "body");
  }
  return r;
}

std::string FormatTokenizeResponse(const TokenizeRequest& request, int max_model_len) {
  std::vector<TokenId> ids = Tokenize(request.text);
  json::array tokens;
  for (TokenId id : ids) tokens.push_back(id);
  json::value strs = nullptr;
  if (request.return_token_strs) {
    json::array a;
    size_t pos = 0;
    for (uint32_t len : TokenLengths(request.text)) {
      a.push_back(json::string(std::string_view(request.text).substr(pos, len)));
      pos += len;
    }
    strs = std::move(a);
  }
  json::object out{{"count", ids.size()},
                   {"max_model_len", max_model_len},
                   {"tokens", std::move(tokens)},
                   {"token_strs", std::move(strs)}};
  return json::serialize(out);
}

}  // namespace kinference::enginesim
