#include "api/openai/stream_assembler.h"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <ctime>
#include <optional>
#include <string>
#include <utility>

#include "api/json_body.h"

namespace kinference::api {
namespace json = boost::json;
namespace {

// Finish's message for an upstream error event: the gateway's words; the upstream's are in
// upstream_error() for the log (they may carry a key or an internal address).
constexpr const char* kUpstreamStreamError = "upstream stream reported an error";

bool IsTrue(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_bool() && v->get_bool();
}

bool IsSet(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && !v->is_null();
}

std::optional<int64_t> IntOf(const json::value* v) {
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  return std::nullopt;
}

const json::string* StringOf(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? v->if_string() : nullptr;
}

void AppendString(const json::object& o, std::string_view key, std::optional<std::string>& out) {
  if (const auto* s = StringOf(o, key)) {
    if (!out) out.emplace();
    out->append(s->data(), s->size());
  }
}

// Appends the elements of o[key] (an array) to `out`; true when it was an array.
bool AppendArray(const json::object& o, std::string_view key, json::array& out) {
  const auto* v = o.if_contains(key);
  const json::array* a = v ? v->if_array() : nullptr;
  if (!a) return false;
  for (const auto& x : *a) out.push_back(x);
  return true;
}

struct ToolCall {
  std::string id;
  std::string type;
  std::optional<std::string> name;
  std::string arguments;
};

struct Choice {
  // chat
  std::string role;
  std::optional<std::string> content;
  std::optional<std::string> refusal;
  std::optional<std::string> reasoning_content;  // vLLM (older)
  std::optional<std::string> reasoning;          // vLLM (newer)
  std::map<int64_t, ToolCall> tool_calls;
  json::array logprobs_content;
  json::array logprobs_refusal;
  bool logprobs_refusal_seen = false;
  // completions
  std::string text;
  json::array tokens, token_logprobs, top_logprobs, text_offset;
  // both
  bool has_logprobs = false;
  json::value finish_reason = nullptr;
  bool stop_reason_seen = false;
  json::value stop_reason = nullptr;
};

}  // namespace

struct StreamAssembler::State {
  ApiKind kind;
  json::value id = nullptr;
  json::value created = nullptr;
  json::value model = nullptr;
  json::value system_fingerprint = nullptr;
  json::value service_tier = nullptr;
  json::value usage = nullptr;
  std::map<int64_t, Choice> choices;
  bool done = false;
  std::optional<std::string> error;
  std::string upstream_error;  // the upstream's own words, for the log only

  void AddChat(Choice& c, const json::object& choice) {
    if (const auto* d = choice.if_contains("delta"); d && d->is_object()) {
      const json::object& delta = d->get_object();
      if (const auto* role = StringOf(delta, "role"); role && c.role.empty())
        c.role = std::string(*role);
      AppendString(delta, "content", c.content);
      AppendString(delta, "refusal", c.refusal);
      AppendString(delta, "reasoning_content", c.reasoning_content);
      AppendString(delta, "reasoning", c.reasoning);
      const auto* tcs = delta.if_contains("tool_calls");
      if (const json::array* arr = tcs ? tcs->if_array() : nullptr) {
        int64_t position = 0;
        for (const auto& t : *arr) {
          const json::object* tc = t.if_object();
          if (!tc) continue;
          // `index` is required in a chunk's tool call; without it, its position.
          int64_t index = IntOf(tc->if_contains("index")).value_or(position);
          ++position;
          ToolCall& call = c.tool_calls[index];
          if (const auto* id = StringOf(*tc, "id"); id && call.id.empty() && !id->empty())
            call.id = std::string(*id);
          if (const auto* type = StringOf(*tc, "type"); type && call.type.empty())
            call.type = std::string(*type);
          const auto* f = tc->if_contains("function");
          if (const json::object* fn = f ? f->if_object() : nullptr) {
            if (const auto* name = StringOf(*fn, "name"); name && !name->empty() && !call.name)
              call.name = std::string(*name);
            if (const auto* args = StringOf(*fn, "arguments"))
              call.arguments.append(args->data(), args->size());
          }
        }
      }
    }
    if (const auto* lp = choice.if_contains("logprobs"); lp && lp->is_object()) {
      c.has_logprobs = true;
      AppendArray(lp->get_object(), "content", c.logprobs_content);
      if (AppendArray(lp->get_object(), "refusal", c.logprobs_refusal))
        c.logprobs_refusal_seen = true;
    }
  }

  void AddCompletion(Choice& c, const json::object& choice) {
    if (const auto* text = StringOf(choice, "text")) c.text.append(text->data(), text->size());
    if (const auto* lp = choice.if_contains("logprobs"); lp && lp->is_object()) {
      c.has_logprobs = true;
      const json::object& o = lp->get_object();
      AppendArray(o, "tokens", c.tokens);
      AppendArray(o, "token_logprobs", c.token_logprobs);
      AppendArray(o, "top_logprobs", c.top_logprobs);
      AppendArray(o, "text_offset", c.text_offset);
    }
  }

  void Add(const StreamChunk& chunk) {
    if (error) return;
    if (chunk.done) {
      done = true;
      return;
    }
    if (!chunk.value.is_object()) {
      error = "upstream sent a stream chunk that is not a JSON object";
      return;
    }
    const json::object& o = chunk.value.get_object();
    if (const auto* err = o.if_contains("error"); err && !err->is_null()) {
      const json::object* eo = err->if_object();
      const json::string* m = eo ? StringOf(*eo, "message") : err->if_string();
      error = kUpstreamStreamError;
      upstream_error = m ? std::string(*m) : json::serialize(*err);
      return;
    }
    if (const auto* obj = StringOf(o, "object"); obj && *obj == "error") {
      const json::string* m = StringOf(o, "message");
      error = kUpstreamStreamError;
      upstream_error = m ? std::string(*m) : json::serialize(o);
      return;
    }
    if (id.is_null() && IsSet(o, "id")) id = o.at("id");
    if (created.is_null() && IsSet(o, "created")) created = o.at("created");
    if (model.is_null() && IsSet(o, "model")) model = o.at("model");
    if (IsSet(o, "system_fingerprint")) system_fingerprint = o.at("system_fingerprint");
    if (IsSet(o, "service_tier")) service_tier = o.at("service_tier");
    if (IsSet(o, "usage")) usage = o.at("usage");
    const auto* cs = o.if_contains("choices");
    const json::array* arr = cs ? cs->if_array() : nullptr;
    if (!arr) return;
    for (const auto& x : *arr) {
      const json::object* choice = x.if_object();
      if (!choice) continue;
      Choice& c = choices[IntOf(choice->if_contains("index")).value_or(0)];
      if (kind == ApiKind::kChatCompletions) {
        AddChat(c, *choice);
      } else {
        AddCompletion(c, *choice);
      }
      if (IsSet(*choice, "finish_reason")) c.finish_reason = choice->at("finish_reason");
      if (const auto* sr = choice->if_contains("stop_reason")) {
        c.stop_reason_seen = true;
        if (!sr->is_null()) c.stop_reason = *sr;
      }
    }
  }

  json::object ChatChoice(int64_t index, const Choice& c) const {
    json::object message;
    message["role"] = c.role.empty() ? "assistant" : c.role;
    if (c.content && !c.content->empty()) {
      message["content"] = *c.content;
    } else if (!c.tool_calls.empty() || c.refusal) {
      message["content"] = nullptr;
    } else {
      message["content"] = "";
    }
    if (c.refusal) message["refusal"] = *c.refusal;
    if (c.reasoning_content) message["reasoning_content"] = *c.reasoning_content;
    if (c.reasoning) message["reasoning"] = *c.reasoning;
    if (!c.tool_calls.empty()) {
      json::array calls;
      for (const auto& [i, t] : c.tool_calls) {
        json::object fn{{"name", t.name ? json::value(*t.name) : json::value(nullptr)},
                        {"arguments", t.arguments}};
        json::object call{{"id", t.id},
                          {"type", t.type.empty() ? "function" : t.type},
                          {"function", std::move(fn)}};
        calls.push_back(std::move(call));
      }
      message["tool_calls"] = std::move(calls);
    }
    json::object out{{"index", index}, {"message", std::move(message)}};
    if (c.has_logprobs) {
      json::object lp{{"content", c.logprobs_content}};
      if (c.logprobs_refusal_seen) lp["refusal"] = c.logprobs_refusal;
      out["logprobs"] = std::move(lp);
    } else {
      out["logprobs"] = nullptr;
    }
    out["finish_reason"] = c.finish_reason;
    if (c.stop_reason_seen) out["stop_reason"] = c.stop_reason;
    return out;
  }

  json::object CompletionChoice(int64_t index, const Choice& c) const {
    json::object out{{"index", index}, {"text", c.text}};
    if (c.has_logprobs) {
      out["logprobs"] = json::object{{"tokens", c.tokens},
                                     {"token_logprobs", c.token_logprobs},
                                     {"top_logprobs", c.top_logprobs},
                                     {"text_offset", c.text_offset}};
    } else {
      out["logprobs"] = nullptr;
    }
    out["finish_reason"] = c.finish_reason;
    if (c.stop_reason_seen) out["stop_reason"] = c.stop_reason;
    return out;
  }
};

bool StreamsFaithfully(ApiKind kind, const json::object& body) {
  if (body.contains("stream_options")) return false;
  if (IsSet(body, "prompt_logprobs") || IsSet(body, "kv_transfer_params")) return false;
  if (IsTrue(body, "return_token_ids") || IsTrue(body, "use_beam_search")) return false;
  if (kind == ApiKind::kCompletions) {
    if (IsTrue(body, "echo")) return false;
    if (auto best_of = IntOf(body.if_contains("best_of")); best_of && *best_of > 1) return false;
  }
  return true;
}

std::string StreamedUpstreamBody(const ParsedRequest& request, std::string_view model) {
  const json::value stream = true;
  const json::value so = json::object{{"include_usage", true}};
  if (model.empty())
    return SerializeWith(request.body, {{"stream", stream}, {"stream_options", so}});
  const json::value model_value = json::string(model);
  return SerializeWith(request.body,
                       {{"model", model_value}, {"stream", stream}, {"stream_options", so}});
}

StreamAssembler::StreamAssembler(ApiKind kind) : s_(std::make_unique<State>()) { s_->kind = kind; }
StreamAssembler::~StreamAssembler() = default;
StreamAssembler::StreamAssembler(StreamAssembler&&) noexcept = default;
StreamAssembler& StreamAssembler::operator=(StreamAssembler&&) noexcept = default;

void StreamAssembler::Add(std::string_view data) { s_->Add(ParseStreamChunk(data)); }
void StreamAssembler::Add(const StreamChunk& chunk) { s_->Add(chunk); }

bool StreamAssembler::failed() const { return s_->error.has_value(); }
const std::string& StreamAssembler::upstream_error() const { return s_->upstream_error; }

Result<std::string> StreamAssembler::Finish() const {
  const State& s = *s_;
  if (s.error) return Status(ErrorCode::kUnavailable, *s.error);
  // Complete: some choice arrived and every one finished; without [DONE], the usage chunk
  // (include_usage is forced, so a clean stream has it) must have arrived too.
  if (s.choices.empty()) {
    return Status(ErrorCode::kUnavailable, "upstream stream ended without any choice");
  }
  for (const auto& [i, c] : s.choices) {
    if (c.finish_reason.is_null()) {
      return Status(ErrorCode::kUnavailable,
                    "upstream stream ended with choice " + std::to_string(i) + " unfinished");
    }
  }
  if (!s.done && s.usage.is_null()) {
    return Status(ErrorCode::kUnavailable, "upstream stream ended without usage or [DONE]");
  }
  const bool chat = s.kind == ApiKind::kChatCompletions;
  json::object out;
  out["id"] = s.id;
  out["object"] = chat ? "chat.completion" : "text_completion";
  // `created` is required in both objects: now, if no chunk carried it.
  out["created"] =
      s.created.is_null() ? json::value(static_cast<int64_t>(std::time(nullptr))) : s.created;
  out["model"] = s.model;
  if (!s.system_fingerprint.is_null()) out["system_fingerprint"] = s.system_fingerprint;
  if (!s.service_tier.is_null()) out["service_tier"] = s.service_tier;
  json::array choices;
  for (const auto& [i, c] : s.choices)
    choices.push_back(chat ? s.ChatChoice(i, c) : s.CompletionChoice(i, c));
  out["choices"] = std::move(choices);
  if (!s.usage.is_null()) out["usage"] = s.usage;
  return json::serialize(out);
}

}  // namespace kinference::api
