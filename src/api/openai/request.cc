#include "api/openai/request.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>
#include <limits>

#include "api/json_body.h"

namespace kinference::api {
namespace json = boost::json;
namespace {

// Text of a message's content: a string, or the text parts of an array of parts.
void AppendContent(const json::value& content, std::string& out) {
  if (const auto* s = content.if_string()) {
    out.append(s->data(), s->size());
  } else if (const auto* parts = content.if_array()) {
    for (const auto& part : *parts) {
      const auto* obj = part.if_object();
      if (!obj) continue;
      if (const auto* text = obj->if_contains("text"); text && text->is_string())
        out.append(text->get_string().data(), text->get_string().size());
    }
  }
}

// An integer field, saturated to int's range: a value beyond it (no model's context
// holds 2^31 tokens) must not wrap, or max_tokens 2^32 + 1 would be estimated as 1
// output token by the router and the tenant limits.
int IntField(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return 0;
  if (v->is_int64()) {
    return static_cast<int>(std::clamp<int64_t>(v->get_int64(), std::numeric_limits<int>::min(),
                                                std::numeric_limits<int>::max()));
  }
  if (v->is_uint64()) {
    return static_cast<int>(std::min<uint64_t>(v->get_uint64(), std::numeric_limits<int>::max()));
  }
  return 0;
}

}  // namespace

Result<std::string> RenderChatText(const json::value& messages) {
  const auto* arr = messages.if_array();
  if (!arr) return InvalidArgument("'messages' must be an array", "messages");
  std::string out;
  for (const auto& m : *arr) {
    const auto* msg = m.if_object();
    if (!msg) return InvalidArgument("each message must be an object", "messages");
    if (const auto* role = msg->if_contains("role"); role && role->is_string())
      out.append(role->get_string().data(), role->get_string().size());
    out += '\n';
    if (const auto* content = msg->if_contains("content")) AppendContent(*content, out);
    out += '\n';
  }
  return out;
}

Result<ParsedRequest> ParseRequest(ApiKind kind, std::string_view body) {
  json::error_code ec;
  json::value v = api::ParseJsonBody(body, ec);
  if (ec) return InvalidArgument("Invalid JSON in request body: " + ec.message(), "");
  if (!v.is_object()) return InvalidArgument("Request body must be a JSON object", "");
  return ParseRequest(kind, std::move(v.get_object()));
}

Result<ParsedRequest> ParseRequest(ApiKind kind, boost::json::object body) {
  ParsedRequest r;
  r.kind = kind;
  r.body = std::move(body);
  const json::object& o = r.body;

  const auto* model = o.if_contains("model");
  if (!model || !model->is_string() || model->get_string().empty()) {
    return InvalidArgument("'model' must be a non-empty string naming a served model", "model");
  }
  r.model = std::string(model->get_string());

  if (const auto* stream = o.if_contains("stream"); stream && !stream->is_null()) {
    if (!stream->is_bool()) return InvalidArgument("'stream' must be a boolean", "stream");
    r.stream = stream->get_bool();
  }
  if (const auto* so = o.if_contains("stream_options"); so && so->is_object()) {
    const auto* iu = so->get_object().if_contains("include_usage");
    r.client_wants_usage = iu && iu->is_bool() && iu->get_bool();
  }
  r.max_tokens = IntField(o, "max_completion_tokens");
  if (r.max_tokens == 0) r.max_tokens = IntField(o, "max_tokens");

  if (kind == ApiKind::kChatCompletions) {
    const auto* messages = o.if_contains("messages");
    if (!messages) return InvalidArgument("'messages' is required", "messages");
    auto text = RenderChatText(*messages);
    if (!text.ok()) return text.status();
    r.prompt_text = std::move(*text);
  } else {
    const auto* prompt = o.if_contains("prompt");
    if (!prompt) return InvalidArgument("'prompt' is required", "prompt");
    if (prompt->is_string()) {
      r.prompt_text = std::string(prompt->get_string());
    } else if (const auto* arr = prompt->if_array(); arr && !arr->empty()) {
      if ((*arr)[0].is_string()) {
        r.prompt_text = std::string((*arr)[0].get_string());
      } else {
        // Token ids: render them, so identical id prefixes give identical text prefixes.
        r.prompt_text = json::serialize(*arr);
      }
    } else {
      return InvalidArgument("'prompt' must be a string or a non-empty array", "prompt");
    }
  }
  return r;
}

std::string UpstreamBody(const ParsedRequest& request, std::string_view model) {
  const json::value model_value = model.empty() ? json::value() : json::value(json::string(model));
  if (!request.stream) {
    if (model.empty()) return json::serialize(request.body);
    return SerializeWith(request.body, {{"model", model_value}});
  }
  // The client's stream_options with include_usage set (a copy of that small object only).
  json::value so = json::object();
  if (const auto* client = request.body.if_contains("stream_options");
      client && client->is_object())
    so = *client;
  so.get_object()["include_usage"] = true;
  if (model.empty() && request.pool_continuous_usage)
    so.get_object()["continuous_usage_stats"] = true;
  if (model.empty()) return SerializeWith(request.body, {{"stream_options", so}});
  return SerializeWith(request.body, {{"model", model_value}, {"stream_options", so}});
}

std::string RenderWithReply(std::string_view prompt_text, std::string_view reply) {
  std::string out;
  out.reserve(prompt_text.size() + reply.size() + 11);
  out.append(prompt_text);
  out.append("assistant\n");
  out.append(reply);
  out += '\n';
  return out;
}

}  // namespace kinference::api
