#include "api/openai/response.h"

#include <boost/json/parse.hpp>
#include <cstdint>

namespace kinference::api {
namespace json = boost::json;
namespace {

int IntField(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return 0;
  if (v->is_int64()) return static_cast<int>(v->get_int64());
  if (v->is_uint64()) return static_cast<int>(v->get_uint64());
  return 0;
}

bool NonEmptyString(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() && !v->get_string().empty();
}

// A token count: absent or null -> 0; nullopt unless an integer in 0..INT32_MAX.
std::optional<int> Count(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v || v->is_null()) return 0;
  if (v->is_int64() && v->get_int64() >= 0 && v->get_int64() <= INT32_MAX)
    return static_cast<int>(v->get_int64());
  if (v->is_uint64() && v->get_uint64() <= INT32_MAX) return static_cast<int>(v->get_uint64());
  return std::nullopt;
}

}  // namespace

std::optional<Usage> ParseUsage(const json::object& response) {
  const auto* u = response.if_contains("usage");
  if (!u || !u->is_object()) return std::nullopt;
  const json::object& usage = u->get_object();
  std::optional<int> prompt = Count(usage, "prompt_tokens");
  std::optional<int> completion = Count(usage, "completion_tokens");
  std::optional<int> cached = 0;
  if (const auto* d = usage.if_contains("prompt_tokens_details"); d && d->is_object())
    cached = Count(d->get_object(), "cached_tokens");
  if (!prompt || !completion || !cached || *cached > *prompt) return std::nullopt;
  return Usage{
      .prompt_tokens = *prompt, .cached_tokens = *cached, .completion_tokens = *completion};
}

StreamChunk ParseStreamChunk(std::string_view data, json::storage_ptr sp) {
  // Built by move construction, which keeps `sp` (assigning into a value would copy the
  // nodes into that value's storage).
  if (data == "[DONE]") return StreamChunk{true, json::value(std::move(sp))};
  json::error_code ec;
  json::value v = json::parse(data, ec, sp);
  if (ec) return StreamChunk{false, json::value(std::move(sp))};
  return StreamChunk{false, std::move(v)};
}

ChunkInfo InspectChunk(std::string_view data) { return InspectChunk(ParseStreamChunk(data)); }

ChunkInfo InspectChunk(const StreamChunk& chunk) {
  ChunkInfo info;
  if (chunk.done) {
    info.done = true;
    return info;
  }
  if (!chunk.value.is_object()) return info;
  info.parsed = true;
  const json::object& o = chunk.value.get_object();
  info.usage = ParseUsage(o);
  const auto* choices = o.if_contains("choices");
  const json::array* arr = choices ? choices->if_array() : nullptr;
  const auto* u = o.if_contains("usage");
  if (u && u->is_object() && (!arr || arr->empty())) info.usage_only = true;
  if (!arr) return info;
  for (const auto& c : *arr) {
    const auto* choice = c.if_object();
    if (!choice) continue;
    if (NonEmptyString(*choice, "text")) info.has_content = true;  // completions
    const auto* delta = choice->if_contains("delta");
    if (delta && delta->is_object()) {
      const json::object& d = delta->get_object();
      if (NonEmptyString(d, "content") || NonEmptyString(d, "reasoning_content"))
        info.has_content = true;
      if (IntField(*choice, "index") == 0 && NonEmptyString(d, "content"))
        info.content = std::string(d.at("content").get_string());
      if (const auto* tc = d.if_contains("tool_calls");
          tc && tc->is_array() && !tc->get_array().empty())
        info.has_content = true;
    }
  }
  return info;
}

std::string ReplyContent(const json::object& response) {
  const auto* choices = response.if_contains("choices");
  const json::array* arr = choices ? choices->if_array() : nullptr;
  if (!arr || arr->empty() || !(*arr)[0].is_object()) return {};
  const auto* message = (*arr)[0].get_object().if_contains("message");
  if (!message || !message->is_object()) return {};
  const auto* content = message->get_object().if_contains("content");
  if (!content || !content->is_string()) return {};
  return std::string(content->get_string());
}

}  // namespace kinference::api
