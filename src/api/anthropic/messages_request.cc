#include "api/anthropic/messages_request.h"

#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "api/json_body.h"

namespace kinference::api::anthropic {
namespace json = boost::json;
namespace {

std::string Field(std::string_view prefix, size_t index) {
  return std::string(prefix) + "." + std::to_string(index);
}

// Text of a tool_result's content: a string, or the text of its text blocks.
Result<std::string> ToolResultText(const json::value& content, const std::string& where) {
  if (content.is_null()) return std::string();
  if (const auto* s = content.if_string()) return std::string(*s);
  const auto* arr = content.if_array();
  if (!arr) return InvalidArgument(where + ".content: must be a string or an array of blocks");
  std::string out;
  for (size_t i = 0; i < arr->size(); ++i) {
    const auto* b = (*arr)[i].if_object();
    const auto* type = b ? b->if_contains("type") : nullptr;
    if (!type || !type->is_string() || type->get_string() != "text")
      return InvalidArgument(where + ".content." + std::to_string(i) +
                             ": only text blocks are supported in tool results");
    const auto* text = b->if_contains("text");
    if (!text || !text->is_string())
      return InvalidArgument(where + ".content." + std::to_string(i) + ".text: Field required");
    if (!out.empty()) out += '\n';
    out.append(text->get_string());
  }
  return out;
}

// Text blocks of `system` or a message's content as OpenAI text parts.
Result<json::array> TextParts(const json::array& blocks, const std::string& where) {
  json::array parts;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto* b = blocks[i].if_object();
    const auto* type = b ? b->if_contains("type") : nullptr;
    const auto* text = b ? b->if_contains("text") : nullptr;
    if (!type || !type->is_string() || type->get_string() != "text" || !text || !text->is_string())
      return InvalidArgument(Field(where, i) + ": expected a text block");
    parts.push_back(json::object{{"type", "text"}, {"text", text->get_string()}});
  }
  return parts;
}

// A `document` block's text for an OpenAI-compatible backend (Anthropic API reference
// "Messages": document sources `text` {media_type "text/plain", data} and `content` {a
// string or text blocks}); its `title` and `context` lead it. A PDF (base64 or url) or a
// file reference has no text to send: 400 saying so (an Anthropic provider gets the
// block natively instead).
Result<std::string> DocumentText(const json::object& block, const std::string& where) {
  const auto* src_v = block.if_contains("source");
  const json::object* src = src_v ? src_v->if_object() : nullptr;
  const auto* st = src ? src->if_contains("type") : nullptr;
  if (!st || !st->is_string()) return InvalidArgument(where + ".source: Field required");
  std::string body;
  if (st->get_string() == "text") {
    const auto* data = src->if_contains("data");
    if (!data || !data->is_string()) return InvalidArgument(where + ".source.data: Field required");
    body = std::string(data->get_string());
  } else if (st->get_string() == "content") {
    const auto* c = src->if_contains("content");
    if (!c) return InvalidArgument(where + ".source.content: Field required");
    if (const auto* str = c->if_string()) {
      body = std::string(*str);
    } else if (const auto* arr = c->if_array()) {
      auto parts = TextParts(*arr, where + ".source.content");
      if (!parts.ok()) return parts.status();
      for (const auto& p : *parts) {
        if (!body.empty()) body += '\n';
        body.append(p.get_object().at("text").get_string());
      }
    } else {
      return InvalidArgument(where + ".source.content: must be a string or an array of blocks");
    }
  } else {
    return InvalidArgument(
        where + ": a document with a '" + std::string(st->get_string()) +
        "' source (a PDF or file) cannot be sent to this model's OpenAI-compatible endpoints; "
        "send its text as a text block or a document with a text source");
  }
  std::string out;
  for (const char* key : {"title", "context"}) {
    if (const auto* v = block.if_contains(key); v && v->is_string() && !v->get_string().empty()) {
      out.append(v->get_string());
      out += "\n\n";
    }
  }
  return out + body;
}

// One Anthropic message -> one or more OpenAI messages appended to `out`.
Status TranslateMessage(const json::value& v, size_t index, json::array& out) {
  const std::string where = Field("messages", index);
  const auto* m = v.if_object();
  if (!m) return InvalidArgument(where + ": must be an object");
  const auto* role_v = m->if_contains("role");
  if (!role_v || !role_v->is_string() ||
      (role_v->get_string() != "user" && role_v->get_string() != "assistant"))
    return InvalidArgument(where + ".role: must be 'user' or 'assistant'");
  const std::string role(role_v->get_string());
  const auto* content = m->if_contains("content");
  if (!content) return InvalidArgument(where + ".content: Field required");
  if (const auto* s = content->if_string()) {
    out.push_back(json::object{{"role", role}, {"content", *s}});
    return Status::Ok();
  }
  const auto* blocks = content->if_array();
  if (!blocks) return InvalidArgument(where + ".content: must be a string or an array of blocks");

  json::array text_parts, tool_calls;
  for (size_t i = 0; i < blocks->size(); ++i) {
    const std::string bw = where + ".content." + std::to_string(i);
    const auto* b = (*blocks)[i].if_object();
    const auto* type_v = b ? b->if_contains("type") : nullptr;
    if (!type_v || !type_v->is_string()) return InvalidArgument(bw + ".type: Field required");
    const std::string_view type = type_v->get_string();
    if (type == "text") {
      const auto* text = b->if_contains("text");
      if (!text || !text->is_string()) return InvalidArgument(bw + ".text: Field required");
      text_parts.push_back(json::object{{"type", "text"}, {"text", text->get_string()}});
    } else if (type == "tool_use" && role == "assistant") {
      const auto* id = b->if_contains("id");
      const auto* name = b->if_contains("name");
      const auto* input = b->if_contains("input");
      if (!id || !id->is_string() || !name || !name->is_string())
        return InvalidArgument(bw + ": tool_use needs 'id' and 'name'");
      std::string arguments = input ? json::serialize(*input) : "{}";
      tool_calls.push_back(json::object{
          {"id", id->get_string()},
          {"type", "function"},
          {"function", json::object{{"name", name->get_string()}, {"arguments", arguments}}}});
    } else if (type == "tool_result" && role == "user") {
      const auto* id = b->if_contains("tool_use_id");
      if (!id || !id->is_string()) return InvalidArgument(bw + ".tool_use_id: Field required");
      const auto* c = b->if_contains("content");
      auto text = c ? ToolResultText(*c, bw) : Result<std::string>(std::string());
      if (!text.ok()) return text.status();
      std::string result = std::move(*text);
      if (const auto* e = b->if_contains("is_error"); e && e->is_bool() && e->get_bool())
        result = "Error: " + result;
      // OpenAI wants each tool message right after the assistant's tool calls, so they
      // go before this user turn's own text.
      out.push_back(json::object{{"role", "tool"}, {"tool_call_id", *id}, {"content", result}});
    } else if (type == "document" && role == "user") {
      auto text = DocumentText(*b, bw);
      if (!text.ok()) return text.status();
      text_parts.push_back(json::object{{"type", "text"}, {"text", std::move(*text)}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      continue;  // the local model did not produce it; nothing to send back
    } else {
      return InvalidArgument(bw + ": content block type '" + std::string(type) +
                             "' is not supported for role '" + role + "'");
    }
  }
  if (role == "assistant") {
    json::object msg{{"role", "assistant"}};
    if (text_parts.empty()) {
      msg["content"] = tool_calls.empty() ? json::value("") : json::value(nullptr);
    } else {
      msg["content"] = std::move(text_parts);
    }
    if (!tool_calls.empty()) msg["tool_calls"] = std::move(tool_calls);
    out.push_back(std::move(msg));
  } else if (!text_parts.empty() || blocks->empty()) {
    out.push_back(json::object{{"role", "user"}, {"content", std::move(text_parts)}});
  }
  return Status::Ok();
}

bool HasTools(const json::object& body) {
  const auto* t = body.if_contains("tools");
  return t && t->is_array() && !t->get_array().empty();
}

// `body`'s translated tools include a function named `name`.
bool HasTool(const json::object& body, std::string_view name) {
  if (!HasTools(body)) return false;
  for (const auto& t : body.at("tools").get_array()) {
    const auto& fn = t.get_object().at("function").get_object();
    if (fn.at("name").get_string() == name) return true;
  }
  return false;
}

// `thinking` as the Messages API accepts it (API reference "Messages", `thinking`):
// {"type":"enabled","budget_tokens": N} with N >= 1024 and N < max_tokens, {"type":
// "disabled"}, or {"type":"adaptive"}. Anything else is 400. Not forwarded: vLLM has no
// per-request thinking budget (docs/anthropic.md).
Status CheckThinking(const json::value& v, int64_t max_tokens) {
  const auto* o = v.if_object();
  if (!o) return InvalidArgument("thinking: Input should be an object");
  const auto* type = o->if_contains("type");
  if (!type || !type->is_string()) return InvalidArgument("thinking.type: Field required");
  const std::string_view t = type->get_string();
  if (t == "disabled" || t == "adaptive") return Status::Ok();
  if (t != "enabled")
    return InvalidArgument("thinking.type: must be 'enabled', 'disabled' or 'adaptive'");
  const auto* b = o->if_contains("budget_tokens");
  if (!b) return InvalidArgument("thinking.enabled.budget_tokens: Field required");
  if (!b->is_int64() && !b->is_uint64())
    return InvalidArgument("thinking.enabled.budget_tokens: Input should be a valid integer");
  const int64_t budget = b->is_int64() ? b->get_int64() : INT64_MAX;
  if (budget < 1024)
    return InvalidArgument(
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
  if (budget >= max_tokens)
    return InvalidArgument("thinking.enabled.budget_tokens: must be less than max_tokens (" +
                           std::to_string(max_tokens) + ")");
  return Status::Ok();
}

Result<json::array> TranslateTools(const json::value& v) {
  const auto* tools = v.if_array();
  if (!tools) return InvalidArgument("tools: must be an array");
  json::array out;
  for (size_t i = 0; i < tools->size(); ++i) {
    const auto* t = (*tools)[i].if_object();
    if (!t) return InvalidArgument(Field("tools", i) + ": must be an object");
    if (const auto* type = t->if_contains("type");
        type && type->is_string() && type->get_string() != "custom")
      return InvalidArgument(Field("tools", i) + ": server tool '" +
                             std::string(type->get_string()) +
                             "' is not supported by this gateway");
    const auto* name = t->if_contains("name");
    if (!name || !name->is_string())
      return InvalidArgument(Field("tools", i) + ".name: Field required");
    json::object fn{{"name", name->get_string()}};
    if (const auto* d = t->if_contains("description"); d && d->is_string())
      fn["description"] = d->get_string();
    const auto* schema = t->if_contains("input_schema");
    if (!schema || !schema->is_object())
      return InvalidArgument(Field("tools", i) + ".input_schema: Field required");
    fn["parameters"] = *schema;
    out.push_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// `tool_choice` as the Messages API checks it: "any" and "tool" need tools, and "tool"
// must name one of them (400 invalid_request_error otherwise).
Status TranslateToolChoice(const json::value& v, json::object& body) {
  const auto* tc = v.if_object();
  const auto* type = tc ? tc->if_contains("type") : nullptr;
  if (!type || !type->is_string()) return InvalidArgument("tool_choice.type: Field required");
  const std::string_view t = type->get_string();
  if (t == "auto") {
    body["tool_choice"] = "auto";
  } else if (t == "any") {
    if (!HasTools(body))
      return InvalidArgument("tool_choice: type 'any' requires tools, and no tools were given");
    body["tool_choice"] = "required";
  } else if (t == "none") {
    body["tool_choice"] = "none";
  } else if (t == "tool") {
    const auto* name = tc->if_contains("name");
    if (!name || !name->is_string()) return InvalidArgument("tool_choice.name: Field required");
    if (!HasTools(body))
      return InvalidArgument("tool_choice: type 'tool' requires tools, and no tools were given");
    if (!HasTool(body, name->get_string()))
      return InvalidArgument("tool_choice.name: no tool named '" + std::string(name->get_string()) +
                             "' in tools");
    body["tool_choice"] =
        json::object{{"type", "function"}, {"function", json::object{{"name", *name}}}};
  } else {
    return InvalidArgument("tool_choice.type: must be auto, any, tool or none");
  }
  if (const auto* d = tc->if_contains("disable_parallel_tool_use"); d && d->is_bool())
    body["parallel_tool_calls"] = !d->get_bool();
  return Status::Ok();
}

}  // namespace

namespace {

Result<json::value> ParseBody(std::string_view body) {
  json::error_code ec;
  json::value v = api::ParseJsonBody(body, ec);
  if (ec) return InvalidArgument("Invalid JSON in request body: " + ec.message());
  if (!v.is_object()) return InvalidArgument("Request body must be a JSON object");
  return v;
}

// Routing input for a request with no OpenAI translation (it goes to Anthropic providers
// only, natively): model, stream, max_tokens and the text of its messages, rendered by
// the chat renderer (which reads the `text` of content blocks).
Result<ParsedRequest> NativeOnlyRequest(const json::object& o) {
  json::object routing;
  for (const char* key : {"model", "stream", "max_tokens", "messages"}) {
    if (const auto* x = o.if_contains(key)) routing[key] = *x;
  }
  return ParseRequest(ApiKind::kChatCompletions, std::move(routing));
}

}  // namespace

Result<MessagesRequest> TranslateRequest(std::string_view body) {
  auto v = ParseBody(body);
  if (!v.ok()) return v.status();
  return TranslateRequest(v->get_object());
}

Result<ParsedMessages> ParseMessages(std::string_view body) {
  auto v = ParseBody(body);
  if (!v.ok()) return v.status();
  const json::object& o = v->get_object();
  ParsedMessages out;
  auto translated = TranslateRequest(o);
  // The equivalent chat completion is read as POST /v1/chat/completions reads its body,
  // so routing features are rendered exactly as there. Untranslatable requests (images,
  // documents, server tools...) keep routing input for an Anthropic provider.
  Result<ParsedRequest> request =
      translated.ok() ? ParseRequest(ApiKind::kChatCompletions, std::move(translated->openai_body))
                      : NativeOnlyRequest(o);
  if (!translated.ok()) {
    if (!request.ok()) return translated.status();
    out.untranslatable = translated.status();
  } else {
    if (!request.ok()) return request.status();
    out.stop_sequences = std::move(translated->stop_sequences);
    // message_start's input_tokens from a local pool's first chunk (messages_response.h).
    request->pool_continuous_usage = request->stream;
  }
  out.request = std::move(*request);
  out.request.original = std::move(*v);
  return out;
}

Result<MessagesRequest> TranslateRequest(const json::object& body) {
  const json::object* o = &body;
  MessagesRequest r;

  const auto* model = o->if_contains("model");
  if (!model || model->is_null()) return InvalidArgument("model: Field required");
  if (!model->is_string()) return InvalidArgument("model: Input should be a valid string");
  if (model->get_string().empty())
    return InvalidArgument("model: String should have at least 1 character");
  r.model = std::string(model->get_string());

  const auto* max_tokens = o->if_contains("max_tokens");
  if (!max_tokens) return InvalidArgument("max_tokens: Field required");
  if (!max_tokens->is_int64() && !max_tokens->is_uint64())
    return InvalidArgument("max_tokens: Input should be a valid integer");
  if (max_tokens->is_int64() && max_tokens->get_int64() < 1)
    return InvalidArgument("max_tokens: Input should be greater than or equal to 1");
  const int64_t mt = max_tokens->is_int64() ? max_tokens->get_int64() : INT32_MAX;
  r.max_tokens = static_cast<int>(std::min<int64_t>(mt, INT32_MAX));

  if (const auto* s = o->if_contains("stream"); s && !s->is_null()) {
    if (!s->is_bool()) return InvalidArgument("stream: Input should be a valid boolean");
    r.stream = s->get_bool();
  }

  json::array messages;
  if (const auto* sys = o->if_contains("system"); sys && !sys->is_null()) {
    if (const auto* s = sys->if_string()) {
      messages.push_back(json::object{{"role", "system"}, {"content", *s}});
    } else if (const auto* blocks = sys->if_array()) {
      auto parts = TextParts(*blocks, "system");
      if (!parts.ok()) return parts.status();
      messages.push_back(json::object{{"role", "system"}, {"content", std::move(*parts)}});
    } else {
      return InvalidArgument("system: must be a string or an array of text blocks");
    }
  }
  const auto* in = o->if_contains("messages");
  if (!in || in->is_null()) return InvalidArgument("messages: Field required");
  if (!in->is_array())
    return InvalidArgument(
        "messages: Input should be a valid list (an array of {\"role\", \"content\"} "
        "messages, not a string)");
  if (in->get_array().empty()) return InvalidArgument("messages: at least one message is required");
  for (size_t i = 0; i < in->get_array().size(); ++i) {
    if (Status s = TranslateMessage(in->get_array()[i], i, messages); !s.ok()) return s;
  }

  json::object& out = r.openai_body;
  out["model"] = r.model;
  out["messages"] = std::move(messages);
  out["max_tokens"] = r.max_tokens;
  out["stream"] = r.stream;
  if (r.stream) out["stream_options"] = json::object{{"include_usage", true}};
  // Ranges of the Messages API reference (docs.anthropic.com/en/api/messages):
  // temperature 0..1, top_p 0..1, top_k >= 0.
  for (const char* name : {"temperature", "top_p", "top_k"}) {
    if (const auto* x = o->if_contains(name); x && !x->is_null()) {
      if (!x->is_number())
        return InvalidArgument(std::string(name) + ": Input should be a valid number");
      const double v = x->to_number<double>();
      if (std::string_view(name) == "top_k") {
        if (!x->is_int64() && !x->is_uint64())
          return InvalidArgument("top_k: Input should be a valid integer");
        if (v < 0) return InvalidArgument("top_k: Input should be greater than or equal to 0");
      } else if (!(v >= 0 && v <= 1)) {
        return InvalidArgument(std::string(name) + ": Input should be between 0 and 1, got " +
                               json::serialize(*x));
      }
      out[name] = *x;
    }
  }
  // vLLM's extra sampling parameter, passed through for load tests (vLLM docs,
  // "Extra Parameters" of the OpenAI-compatible server).
  if (const auto* x = o->if_contains("ignore_eos"); x && x->is_bool()) out["ignore_eos"] = *x;
  if (const auto* stop = o->if_contains("stop_sequences"); stop && !stop->is_null()) {
    const auto* arr = stop->if_array();
    if (!arr) return InvalidArgument("stop_sequences: must be an array of strings");
    for (const auto& s : *arr) {
      if (!s.is_string()) return InvalidArgument("stop_sequences: must be an array of strings");
      r.stop_sequences.emplace_back(s.get_string());
    }
    if (!arr->empty()) out["stop"] = *arr;
  }
  if (const auto* tools = o->if_contains("tools"); tools && !tools->is_null()) {
    auto t = TranslateTools(*tools);
    if (!t.ok()) return t.status();
    if (!t->empty()) out["tools"] = std::move(*t);
  }
  if (const auto* tc = o->if_contains("tool_choice"); tc && !tc->is_null()) {
    if (Status s = TranslateToolChoice(*tc, out); !s.ok()) return s;
  }
  if (const auto* th = o->if_contains("thinking"); th && !th->is_null()) {
    if (Status s = CheckThinking(*th, mt); !s.ok()) return s;
  }
  if (const auto* md = o->if_contains("metadata"); md && md->is_object()) {
    if (const auto* user = md->get_object().if_contains("user_id"); user && user->is_string())
      out["user"] = *user;
  }
  return r;
}

const char* ErrorType(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_request_error";
    case ErrorCode::kUnauthenticated:
      return "authentication_error";
    case ErrorCode::kPermissionDenied:
      return "permission_error";
    case ErrorCode::kNotFound:
      return "not_found_error";
    case ErrorCode::kPayloadTooLarge:
      return "request_too_large";
    case ErrorCode::kResourceExhausted:
      return "rate_limit_error";
    case ErrorCode::kUnavailable:
      return "overloaded_error";
    case ErrorCode::kDeadlineExceeded:
      return "timeout_error";
    default:
      return "api_error";
  }
}

int ErrorHttpStatus(ErrorCode code) {
  // 529: Anthropic's "overloaded_error" status.
  return code == ErrorCode::kUnavailable ? 529 : HttpStatusFor(code);
}

const char* ErrorTypeForHttpStatus(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
  }
}

int AnthropicStatusForUpstream(int status) { return status == 503 ? 529 : status; }

std::string ErrorBody(std::string_view type, std::string_view message) {
  return json::serialize(json::object{
      {"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}});
}

std::string ErrorBody(const Status& status) {
  return ErrorBody(ErrorType(status.code()), status.message());
}

std::optional<std::string> ReplaceStreamError(std::string_view data, std::string_view request_id) {
  if (data.empty() || data.front() != '{') return std::nullopt;
  boost::system::error_code ec;
  json::value v = json::parse(data, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  if (!o) return std::nullopt;
  const json::value* t = o->if_contains("type");
  if (!t || !t->is_string() || t->get_string() != "error") return std::nullopt;
  static constexpr std::string_view kDocumented[] = {
      "invalid_request_error", "authentication_error", "billing_error",    "permission_error",
      "not_found_error",       "request_too_large",    "rate_limit_error", "api_error",
      "timeout_error",         "overloaded_error"};
  std::string_view type = "api_error";
  if (const json::value* e = o->if_contains("error"); e && e->is_object()) {
    if (const json::value* et = e->get_object().if_contains("type"); et && et->is_string()) {
      for (std::string_view known : kDocumented) {
        if (et->get_string() == known) type = known;
      }
    }
  }
  return ErrorBody(type, fmt::format("The provider reported {} during the stream; request id {}.",
                                     type, request_id));
}

}  // namespace kinference::api::anthropic
