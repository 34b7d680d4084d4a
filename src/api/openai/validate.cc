#include "api/openai/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <array>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <string>

namespace kinference::api {
namespace json = boost::json;
namespace {

Status Invalid(std::string message, std::string param) {
  Status s(ErrorCode::kInvalidArgument, std::move(message));
  s.WithParam(std::move(param));
  return s;
}

std::string Describe(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return "a string";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
    default:
      return json::serialize(v);
  }
}

Status Number(const json::object& o, const char* key, double lo, double hi) {
  const auto* v = o.if_contains(key);
  if (!v || v->is_null()) return Status::Ok();
  if (!v->is_number())
    return Invalid(fmt::format("'{}' must be a number, got {}", key, Describe(*v)), key);
  double x = v->to_number<double>();
  if (!(x >= lo && x <= hi))
    return Invalid(fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, x), key);
  return Status::Ok();
}

Status Integer(const json::object& o, const char* key, int64_t lo, int64_t hi) {
  const auto* v = o.if_contains(key);
  if (!v || v->is_null()) return Status::Ok();
  int64_t x = 0;
  if (v->is_int64()) {
    x = v->get_int64();
  } else if (v->is_uint64()) {
    x = INT64_MAX;
  } else {
    return Invalid(fmt::format("'{}' must be an integer, got {}", key, Describe(*v)), key);
  }
  if (x < lo || x > hi) {
    return Invalid(hi == INT64_MAX
                       ? fmt::format("'{}' must be at least {}, got {}", key, lo, x)
                       : fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, x),
                   key);
  }
  return Status::Ok();
}

constexpr std::array<std::string_view, 6> kRoles = {"system",    "developer", "user",
                                                    "assistant", "tool",      "function"};

Status Roles(const json::object& o) {
  const auto* messages = o.if_contains("messages");
  const auto* arr = messages ? messages->if_array() : nullptr;
  if (!arr) return Status::Ok();  // the parser reports it
  for (size_t i = 0; i < arr->size(); ++i) {
    const std::string where = fmt::format("messages[{}]", i);
    const auto* m = (*arr)[i].if_object();
    if (!m) return Invalid(where + " must be an object", where);
    const auto* role = m->if_contains("role");
    if (!role) return Invalid(where + ".role is required", where + ".role");
    if (!role->is_string())
      return Invalid(fmt::format("{}.role must be a string, got {}", where, Describe(*role)),
                     where + ".role");
    std::string_view r = role->get_string();
    if (std::find(kRoles.begin(), kRoles.end(), r) == kRoles.end()) {
      return Invalid(fmt::format("{}.role '{}' is not one of system, developer, user, "
                                 "assistant, tool, function",
                                 where, r),
                     where + ".role");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateOpenAiFields(ApiKind kind, const json::object& o) {
  const bool chat = kind == ApiKind::kChatCompletions;
  for (Status s : {Number(o, "temperature", 0, 2), Number(o, "top_p", 0, 1),
                   Number(o, "presence_penalty", -2, 2), Number(o, "frequency_penalty", -2, 2),
                   Integer(o, "n", 1, INT64_MAX), Integer(o, "max_tokens", chat ? 1 : 0, INT64_MAX),
                   Integer(o, "max_completion_tokens", 1, INT64_MAX)}) {
    if (!s.ok()) return s;
  }
  if (chat) {
    if (Status s = Integer(o, "top_logprobs", 0, 20); !s.ok()) return s;
    if (const auto* lp = o.if_contains("logprobs"); lp && !lp->is_null() && !lp->is_bool())
      return Invalid("'logprobs' must be a boolean, got " + Describe(*lp), "logprobs");
    return Roles(o);
  }
  return Integer(o, "logprobs", 0, 5);
}

Status CheckJsonContentType(std::string_view content_type) {
  if (content_type.empty()) return Status::Ok();
  std::string media(content_type.substr(0, content_type.find(';')));
  while (!media.empty() && std::isspace(static_cast<unsigned char>(media.back()))) media.pop_back();
  size_t start = 0;
  while (start < media.size() && std::isspace(static_cast<unsigned char>(media[start]))) ++start;
  media = media.substr(start);
  std::transform(media.begin(), media.end(), media.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (media == "application/json" ||
      (media.starts_with("application/") && media.ends_with("+json")))
    return Status::Ok();
  return Invalid(fmt::format("Content-Type must be application/json, got '{}'", media),
                 "Content-Type");
}

}  // namespace kinference::api
