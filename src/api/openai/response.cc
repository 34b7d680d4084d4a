#include "api/openai/response.h"

#include <boost/json/basic_parser_impl.hpp>
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

namespace {

// ScanStreamChunk's boost::json::basic_parser handler: follows the path InspectChunk reads
// (the top object's choices[] objects, their text, index and delta, the delta's content,
// reasoning_content and tool_calls) and skips everything else. Returning false from a
// callback stops the parse: the caller falls back to the parsed value.
class ChunkScan {
 public:
  static constexpr std::size_t max_array_size = -1;
  static constexpr std::size_t max_object_size = -1;
  static constexpr std::size_t max_string_size = -1;
  static constexpr std::size_t max_key_size = -1;

  ChunkInfo info;

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }

  bool on_object_begin(json::error_code&) {
    if (depth_ == 0) return Push(Role::kTop);
    if (skip_ > 0 || Top().role == Role::kSkip) return Skip();
    const Frame& parent = Top();
    if (parent.role == Role::kChoices) {
      choice_ = Choice{};
      return Push(Role::kChoice);
    }
    if (parent.role == Role::kTop && parent.field == Field::kUsage) return false;
    if (parent.role == Role::kChoice && parent.field == Field::kDelta) return Push(Role::kDelta);
    return Skip();
  }
  bool on_object_end(std::size_t, json::error_code&) {
    if (skip_ > 0) return --skip_, true;
    if (Pop() == Role::kChoice && choice_.index_zero && !choice_.content.empty())
      info.content = std::move(choice_.content);
    return true;
  }
  bool on_array_begin(json::error_code&) {
    if (depth_ == 0) return false;  // not an object
    if (skip_ > 0 || Top().role == Role::kSkip) return Skip();
    const Frame& parent = Top();
    if (parent.role == Role::kTop && parent.field == Field::kChoices) return Push(Role::kChoices);
    if (parent.role == Role::kDelta && parent.field == Field::kToolCalls)
      return Push(Role::kToolCalls);
    return Skip();
  }
  bool on_array_end(std::size_t n, json::error_code&) {
    if (skip_ > 0) return --skip_, true;
    if (Pop() == Role::kToolCalls && n > 0) info.has_content = true;
    return true;
  }

  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code&) {
    if (skip_ > 0) {
      key_.clear();
      return true;
    }
    Frame& f = Top();
    std::string_view key(s.data(), s.size());
    if (!key_.empty()) {
      key_.append(s.data(), s.size());
      key = key_;
    }
    f.field = FieldOf(f.role, key);
    key_.clear();
    if (f.field == Field::kOther) return true;
    const auto bit = static_cast<uint8_t>(1u << static_cast<unsigned>(f.field));
    if (f.seen & bit) return false;  // a repeated key: the parsed value keeps the last
    f.seen |= bit;
    return true;
  }

  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    if (ValueIs(Role::kDelta, Field::kContent)) string_.append(s.data(), s.size());
    return true;
  }
  bool on_string(json::string_view s, std::size_t n, json::error_code&) {
    if (depth_ == 0) return false;  // not an object
    if (skip_ > 0) return true;
    if (n > 0 &&
        (ValueIs(Role::kChoice, Field::kText) || ValueIs(Role::kDelta, Field::kReasoningContent))) {
      info.has_content = true;
    } else if (ValueIs(Role::kDelta, Field::kContent)) {
      string_.append(s.data(), s.size());
      if (n > 0) info.has_content = true;
      choice_.content = std::move(string_);
    }
    string_.clear();
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(int64_t i, json::string_view, json::error_code&) {
    return Index(static_cast<int>(i) == 0);
  }
  bool on_uint64(uint64_t u, json::string_view, json::error_code&) {
    return Index(static_cast<int>(u) == 0);
  }
  bool on_double(double, json::string_view, json::error_code&) { return Index(true); }
  bool on_bool(bool, json::error_code&) { return Index(true); }
  bool on_null(json::error_code&) { return Index(true); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  enum class Role : uint8_t { kTop, kChoices, kChoice, kDelta, kToolCalls, kSkip };
  enum class Field : uint8_t {
    kChoices,
    kUsage,  // of the top object
    kText,
    kIndex,
    kDelta,  // of a choice
    kContent,
    kReasoningContent,
    kToolCalls,  // of a delta
    kOther,
  };
  struct Frame {
    Role role = Role::kSkip;
    Field field = Field::kOther;  // the key whose value is being read (objects)
    uint8_t seen = 0;             // Field bits of the keys met (objects)
  };
  // choices[i] being read: InspectChunk's IntField(choice, "index") == 0 (absent or not an
  // integer reads 0), delta.content.
  struct Choice {
    bool index_zero = true;
    std::string content;
  };

  static Field FieldOf(Role role, std::string_view key) {
    switch (role) {
      case Role::kTop:
        if (key == "choices") return Field::kChoices;
        if (key == "usage") return Field::kUsage;
        break;
      case Role::kChoice:
        if (key == "text") return Field::kText;
        if (key == "index") return Field::kIndex;
        if (key == "delta") return Field::kDelta;
        break;
      case Role::kDelta:
        if (key == "content") return Field::kContent;
        if (key == "reasoning_content") return Field::kReasoningContent;
        if (key == "tool_calls") return Field::kToolCalls;
        break;
      default:
        break;
    }
    return Field::kOther;
  }

  Frame& Top() { return frames_[depth_ - 1]; }
  bool Push(Role role) {
    if (depth_ == kMaxDepth) return false;
    frames_[depth_++] = Frame{role};
    return true;
  }
  Role Pop() { return frames_[--depth_].role; }
  bool Skip() {
    if (Top().role == Role::kSkip) return ++skip_, true;
    return Push(Role::kSkip);
  }
  // The value being read is the `field` of an object of `role`.
  bool ValueIs(Role role, Field field) {
    return skip_ == 0 && depth_ > 0 && Top().role == role && Top().field == field;
  }
  // A scalar: only a choice's index matters.
  bool Index(bool zero) {
    if (depth_ == 0) return false;  // not an object
    if (ValueIs(Role::kChoice, Field::kIndex)) choice_.index_zero = zero;
    return true;
  }

  static constexpr int kMaxDepth = 8;
  Frame frames_[kMaxDepth];
  int depth_ = 0;
  size_t skip_ = 0;     // containers open inside the innermost kSkip frame
  std::string key_;     // a key given in parts
  std::string string_;  // delta.content given in parts
  Choice choice_;
};

}  // namespace

std::optional<ChunkInfo> ScanStreamChunk(std::string_view data) {
  if (data == "[DONE]") {
    ChunkInfo info;
    info.done = true;
    return info;
  }
  json::basic_parser<ChunkScan> p(json::parse_options{});
  json::error_code ec;
  const size_t used = p.write_some(false, data.data(), data.size(), ec);
  if (ec || !p.done() || used != data.size()) return std::nullopt;  // trailing bytes too
  ChunkInfo& info = p.handler().info;
  info.parsed = true;
  return std::move(info);
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
