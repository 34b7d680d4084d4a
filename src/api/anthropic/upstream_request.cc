#include "api/anthropic/upstream_request.h"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "api/json_body.h"

namespace kinference::api::anthropic {
namespace json = boost::json;
namespace {

std::string Where(size_t message, std::string_view rest = {}) {
  return "messages[" + std::to_string(message) + "]" + std::string(rest);
}

// data:<media type>;base64,<data> -> an Anthropic base64 image source; other URLs are
// passed as url sources (Anthropic API reference "Messages", image content blocks).
json::object ImageSource(std::string_view url) {
  constexpr std::string_view kData = "data:";
  constexpr std::string_view kBase64 = ";base64,";
  if (url.starts_with(kData)) {
    size_t at = url.find(kBase64);
    if (at != std::string_view::npos) {
      return json::object{{"type", "base64"},
                          {"media_type", url.substr(kData.size(), at - kData.size())},
                          {"data", url.substr(at + kBase64.size())}};
    }
  }
  return json::object{{"type", "url"}, {"url", url}};
}

// OpenAI message content (string, parts or null) -> Anthropic blocks appended to `out`.
Status ContentBlocks(const json::value* content, const std::string& where, json::array& out) {
  if (!content || content->is_null()) return Status::Ok();
  if (const auto* s = content->if_string()) {
    if (!s->empty()) out.push_back(json::object{{"type", "text"}, {"text", *s}});
    return Status::Ok();
  }
  const auto* parts = content->if_array();
  if (!parts) return InvalidArgument("content must be a string, an array of parts or null", where);
  for (const auto& p : *parts) {
    const auto* part = p.if_object();
    const auto* type = part ? part->if_contains("type") : nullptr;
    if (!type || !type->is_string()) return InvalidArgument("content part without a type", where);
    if (type->get_string() == "text") {
      const auto* text = part->if_contains("text");
      if (!text || !text->is_string()) return InvalidArgument("text part without text", where);
      out.push_back(json::object{{"type", "text"}, {"text", *text}});
    } else if (type->get_string() == "image_url") {
      const auto* iu = part->if_contains("image_url");
      const auto* url = iu && iu->is_object() ? iu->get_object().if_contains("url") : nullptr;
      if (!url || !url->is_string()) return InvalidArgument("image_url part without url", where);
      out.push_back(json::object{{"type", "image"}, {"source", ImageSource(url->get_string())}});
    } else {
      return InvalidArgument("content parts of type '" + std::string(type->get_string()) +
                                 "' cannot be sent to an Anthropic provider",
                             where);
    }
  }
  return Status::Ok();
}

// Appends one turn, merging it into the previous one when the role repeats (Anthropic
// needs alternating user/assistant turns). `lead`: the blocks go after the tool_result
// blocks already leading that turn but before its other blocks (Anthropic requires tool
// results first in a user turn).
void AppendTurn(json::array& messages, std::string_view role, json::array blocks,
                bool lead = false) {
  if (!messages.empty()) {
    json::object& last = messages.back().as_object();
    if (last["role"].as_string() == role) {
      json::array& content = last["content"].as_array();
      auto at = content.end();
      if (lead) {
        at = std::find_if(content.begin(), content.end(), [](const json::value& b) {
          return b.as_object().at("type") != "tool_result";
        });
      }
      content.insert(at, blocks.begin(), blocks.end());
      return;
    }
  }
  messages.push_back(json::object{{"role", role}, {"content", std::move(blocks)}});
}

Status TranslateMessage(const json::value& v, size_t i, json::array& system,
                        json::array& messages) {
  const auto* m = v.if_object();
  const auto* role_v = m ? m->if_contains("role") : nullptr;
  if (!role_v || !role_v->is_string()) return InvalidArgument("message without a role", Where(i));
  const std::string_view role = role_v->get_string();
  const json::value* content = m->if_contains("content");
  if (role == "system" || role == "developer") {
    return ContentBlocks(content, Where(i, ".content"), system);
  }
  json::array blocks;
  if (role == "user") {
    if (Status s = ContentBlocks(content, Where(i, ".content"), blocks); !s.ok()) return s;
    AppendTurn(messages, "user", std::move(blocks));
    return Status::Ok();
  }
  if (role == "assistant") {
    if (Status s = ContentBlocks(content, Where(i, ".content"), blocks); !s.ok()) return s;
    const auto* tcs = m->if_contains("tool_calls");
    for (const auto& tc : tcs && tcs->is_array() ? tcs->get_array() : json::array()) {
      const auto* call = tc.if_object();
      const auto* fn = call ? call->if_contains("function") : nullptr;
      const auto* f = fn ? fn->if_object() : nullptr;
      const auto* id = call ? call->if_contains("id") : nullptr;
      const auto* name = f ? f->if_contains("name") : nullptr;
      if (!id || !id->is_string() || !name || !name->is_string())
        return InvalidArgument("tool call without id or function.name", Where(i, ".tool_calls"));
      json::value input = json::object();
      if (const auto* args = f->if_contains("arguments");
          args && args->is_string() && !args->get_string().empty()) {
        json::error_code ec;
        input = api::ParseJsonBody(args->get_string(), ec);
        if (ec || !input.is_object())
          return InvalidArgument("tool call arguments must be a JSON object",
                                 Where(i, ".tool_calls"));
      }
      blocks.push_back(json::object{
          {"type", "tool_use"}, {"id", *id}, {"name", *name}, {"input", std::move(input)}});
    }
    AppendTurn(messages, "assistant", std::move(blocks));
    return Status::Ok();
  }
  if (role == "tool") {
    const auto* id = m->if_contains("tool_call_id");
    if (!id || !id->is_string())
      return InvalidArgument("tool message without tool_call_id", Where(i));
    json::array result;
    if (Status s = ContentBlocks(content, Where(i, ".content"), result); !s.ok()) return s;
    json::object block{{"type", "tool_result"}, {"tool_use_id", *id}};
    if (!result.empty()) block["content"] = std::move(result);
    // Tool results lead their user turn: merged before text already in it.
    AppendTurn(messages, "user", json::array{std::move(block)}, /*lead=*/true);
    return Status::Ok();
  }
  return InvalidArgument("role '" + std::string(role) + "' cannot be sent to an Anthropic provider",
                         Where(i, ".role"));
}

Result<json::array> TranslateTools(const json::value& v) {
  const auto* tools = v.if_array();
  if (!tools) return InvalidArgument("tools must be an array", "tools");
  json::array out;
  for (const auto& t : *tools) {
    const auto* tool = t.if_object();
    const auto* fn = tool ? tool->if_contains("function") : nullptr;
    const auto* f = fn ? fn->if_object() : nullptr;
    const auto* name = f ? f->if_contains("name") : nullptr;
    if (!name || !name->is_string()) return InvalidArgument("tool without function.name", "tools");
    json::object o{{"name", *name}};
    if (const auto* d = f->if_contains("description"); d && d->is_string()) o["description"] = *d;
    const auto* params = f->if_contains("parameters");
    // Anthropic requires an object schema; OpenAI allows omitting it (no parameters).
    o["input_schema"] =
        params && params->is_object()
            ? *params
            : json::value(json::object{{"type", "object"}, {"properties", json::object()}});
    out.push_back(std::move(o));
  }
  return out;
}

Result<json::object> TranslateToolChoice(const json::value& v) {
  if (const auto* s = v.if_string()) {
    if (*s == "auto") return json::object{{"type", "auto"}};
    if (*s == "required") return json::object{{"type", "any"}};
    if (*s == "none") return json::object{{"type", "none"}};
  } else if (const auto* o = v.if_object()) {
    const auto* fn = o->if_contains("function");
    const auto* name = fn && fn->is_object() ? fn->get_object().if_contains("name") : nullptr;
    if (name && name->is_string()) return json::object{{"type", "tool"}, {"name", *name}};
  }
  return InvalidArgument("tool_choice must be auto, required, none or a named function",
                         "tool_choice");
}

}  // namespace

Result<std::string> BuildMessagesRequest(const json::object& chat,
                                         const UpstreamRequestOptions& options) {
  if (const auto* n = chat.if_contains("n"); n && n->is_number() && n->to_number<double>() != 1)
    return InvalidArgument("only n=1 can be sent to an Anthropic provider", "n");
  const auto* in = chat.if_contains("messages");
  if (!in || !in->is_array()) return InvalidArgument("'messages' is required", "messages");
  json::array system, messages;
  for (size_t i = 0; i < in->get_array().size(); ++i) {
    if (Status s = TranslateMessage(in->get_array()[i], i, system, messages); !s.ok()) return s;
  }
  json::object out{{"model", options.model}};
  int max_tokens = options.default_max_tokens;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {  // the latter wins
    const auto* v = chat.if_contains(name);
    if (v && (v->is_int64() || v->is_uint64()))
      max_tokens = static_cast<int>(std::clamp<int64_t>(v->to_number<int64_t>(), 1, INT32_MAX));
  }
  out["max_tokens"] = max_tokens;
  if (system.size() == 1) {
    out["system"] = system[0].as_object()["text"];
  } else if (!system.empty()) {
    out["system"] = std::move(system);
  }
  out["messages"] = std::move(messages);
  if (const auto* s = chat.if_contains("stream"); s && s->is_bool() && s->get_bool())
    out["stream"] = true;
  if (const auto* t = chat.if_contains("temperature"); t && t->is_number()) {
    // OpenAI accepts 0..2, Anthropic 0..1 (API reference "Messages", temperature).
    out["temperature"] = std::clamp(t->to_number<double>(), 0.0, 1.0);
  }
  for (const char* name : {"top_p", "top_k"}) {
    if (const auto* x = chat.if_contains(name); x && x->is_number()) out[name] = *x;
  }
  if (const auto* stop = chat.if_contains("stop"); stop && !stop->is_null()) {
    if (stop->is_string()) {
      out["stop_sequences"] = json::array{*stop};
    } else if (stop->is_array() && !stop->get_array().empty()) {
      out["stop_sequences"] = *stop;
    }
  }
  if (const auto* tools = chat.if_contains("tools"); tools && !tools->is_null()) {
    auto t = TranslateTools(*tools);
    if (!t.ok()) return t.status();
    if (!t->empty()) out["tools"] = std::move(*t);
  }
  json::object tool_choice;
  if (const auto* tc = chat.if_contains("tool_choice"); tc && !tc->is_null()) {
    auto t = TranslateToolChoice(*tc);
    if (!t.ok()) return t.status();
    tool_choice = std::move(*t);
  }
  if (const auto* p = chat.if_contains("parallel_tool_calls");
      p && p->is_bool() && !p->get_bool() && out.contains("tools")) {
    if (tool_choice.empty()) tool_choice = json::object{{"type", "auto"}};
    if (tool_choice["type"] != "none") tool_choice["disable_parallel_tool_use"] = true;
  }
  if (!tool_choice.empty()) out["tool_choice"] = std::move(tool_choice);
  if (const auto* u = chat.if_contains("user"); u && u->is_string())
    out["metadata"] = json::object{{"user_id", *u}};
  return json::serialize(out);
}

Result<std::string> NativeRequestBody(const json::value& body, std::string_view model) {
  if (!body.is_object())
    return Status(ErrorCode::kInvalidArgument, "Request body must be a JSON object");
  const json::value model_value = json::string(model);
  return SerializeWith(body.get_object(), {{"model", model_value}});
}

}  // namespace kinference::api::anthropic
