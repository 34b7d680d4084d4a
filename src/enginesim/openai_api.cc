#include "enginesim/openai_api.h"

#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "api/json_body.h"
#include "engine/chat_template.h"

namespace kinference::enginesim {

namespace json = boost::json;

Result<json::object> ParseObject(std::string_view body) {
  boost::system::error_code ec;
  json::value v = api::ParseJsonBody(body, ec);
  // vLLM (FastAPI) reports an undecodable body as a validation error at "body...".
  if (ec) return InvalidArgument("Invalid JSON in request body: " + ec.message(), "body");
  if (!v.is_object()) return InvalidArgument("Request body must be a JSON object", "body");
  return std::move(v.as_object());
}

namespace {

// A JSON number that holds an integer (5 or 5.0), else nullopt.
std::optional<int64_t> AsInteger(const json::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64() && v.as_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v.as_uint64());
  }
  if (v.is_double()) {
    double d = v.as_double();
    if (d == static_cast<double>(static_cast<int64_t>(d)) && std::abs(d) < 9e18) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

// Fields shared by both endpoints.
Status ParseCommon(const json::object& o, GenerationRequest& r) {
  if (auto* m = o.if_contains("model"); m && !m->is_null()) {
    if (!m->is_string()) return InvalidArgument("model must be a string", "model");
    r.model = std::string(m->as_string());
  }
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    auto* v = o.if_contains(name);
    if (!v || v->is_null()) continue;
    auto n = AsInteger(*v);
    if (!n) return InvalidArgument(std::string(name) + " must be an integer", name);
    if (*n < 1)
      return InvalidArgument(std::string(name) + " must be at least 1, got " + std::to_string(*n),
                             name);
    if (*n > std::numeric_limits<int>::max())
      return InvalidArgument(std::string(name) + " is too large", name);
    // vLLM: max_completion_tokens takes precedence over the deprecated max_tokens.
    r.max_tokens = static_cast<int>(*n);
  }
  auto flag = [&](const char* name, bool& out) -> Status {
    auto* v = o.if_contains(name);
    if (!v || v->is_null()) return Status::Ok();
    if (!v->is_bool()) return InvalidArgument(std::string(name) + " must be a boolean", name);
    out = v->as_bool();
    return Status::Ok();
  };
  if (Status s = flag("stream", r.stream); !s.ok()) return s;
  if (Status s = flag("ignore_eos", r.ignore_eos); !s.ok()) return s;
  if (auto* so = o.if_contains("stream_options"); so && !so->is_null()) {
    if (!so->is_object())
      return InvalidArgument("stream_options must be an object", "stream_options");
    // vLLM: "Stream options can only be defined when `stream=True`."
    if (!r.stream) {
      return InvalidArgument("Stream options can only be defined when `stream=True`.",
                             "stream_options");
    }
    if (auto* iu = so->as_object().if_contains("include_usage"); iu && !iu->is_null()) {
      if (!iu->is_bool())
        return InvalidArgument("include_usage must be a boolean", "stream_options");
      r.include_usage = iu->as_bool();
    }
    if (auto* cu = so->as_object().if_contains("continuous_usage_stats"); cu && !cu->is_null()) {
      if (!cu->is_bool())
        return InvalidArgument("continuous_usage_stats must be a boolean", "stream_options");
      r.continuous_usage = cu->as_bool();
    }
  }
  if (auto* v = o.if_contains("seed"); v && !v->is_null()) {
    auto n = AsInteger(*v);
    if (!n) return InvalidArgument("seed must be an integer", "seed");
    r.seed = static_cast<uint64_t>(*n);
  }
  for (const char* name : {"temperature", "top_p"}) {  // accepted, not used
    auto* v = o.if_contains(name);
    if (v && !v->is_null() && !v->is_number())
      return InvalidArgument(std::string(name) + " must be a number", name);
  }
  if (auto* v = o.if_contains("n"); v && !v->is_null()) {
    auto n = AsInteger(*v);
    if (!n || *n != 1) return InvalidArgument("only n=1 is supported", "n");
  }
  return Status::Ok();
}

Result<std::vector<TokenId>> TokenIds(const json::array& a) {
  std::vector<TokenId> ids;
  ids.reserve(a.size());
  for (const auto& v : a) {
    auto n = AsInteger(v);
    if (!n || *n < 0 || *n > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument("prompt token ids must be non-negative integers", "prompt");
    }
    ids.push_back(static_cast<TokenId>(*n));
  }
  return ids;
}

}  // namespace

Result<GenerationRequest> ParseCompletionRequest(std::string_view body) {
  auto obj = ParseObject(body);
  if (!obj.ok()) return obj.status();
  const json::object& o = *obj;
  GenerationRequest r;
  if (Status s = ParseCommon(o, r); !s.ok()) return s;
  const json::value* p = o.if_contains("prompt");
  if (!p || p->is_null()) return InvalidArgument("prompt is required", "prompt");
  if (p->is_string()) {
    r.prompt = Tokenize(p->as_string());
  } else if (p->is_array()) {
    const json::array& a = p->as_array();
    if (a.empty()) return InvalidArgument("prompt must not be empty", "prompt");
    if (a[0].is_string() || a[0].is_array()) {
      if (a.size() != 1) return InvalidArgument("batched prompts are not supported", "prompt");
      if (a[0].is_string()) {
        r.prompt = Tokenize(a[0].as_string());
      } else {
        auto ids = TokenIds(a[0].as_array());
        if (!ids.ok()) return ids.status();
        r.prompt = std::move(*ids);
      }
    } else {
      auto ids = TokenIds(a);
      if (!ids.ok()) return ids.status();
      r.prompt = std::move(*ids);
    }
  } else {
    return InvalidArgument("prompt must be a string or a list of token ids", "prompt");
  }
  if (r.prompt.empty()) return InvalidArgument("prompt must not be empty", "prompt");
  return r;
}

Result<engine::ChatMessages> ParseMessages(const json::value* m) {
  if (!m || !m->is_array() || m->as_array().empty()) {
    return InvalidArgument("messages must be a non-empty list", "messages");
  }
  engine::ChatMessages messages;
  for (const auto& mv : m->as_array()) {
    if (!mv.is_object()) return InvalidArgument("each message must be an object", "messages");
    const json::object& msg = mv.as_object();
    const json::value* role = msg.if_contains("role");
    if (!role || !role->is_string())
      return InvalidArgument("message role must be a string", "messages");
    std::string content;
    const json::value* c = msg.if_contains("content");
    if (c && c->is_string()) {
      content = std::string(c->as_string());
    } else if (c && c->is_array()) {
      for (const auto& part : c->as_array()) {
        const json::object* po = part.if_object();
        const json::value* type = po ? po->if_contains("type") : nullptr;
        const json::value* text = po ? po->if_contains("text") : nullptr;
        if (!type || !type->is_string() || type->as_string() != "text" || !text ||
            !text->is_string()) {
          return InvalidArgument("only content parts of type \"text\" are supported", "messages");
        }
        content += std::string_view(text->as_string());
      }
    } else if (c && !c->is_null()) {
      return InvalidArgument("message content must be a string, a list of parts or null",
                             "messages");
    }
    messages.emplace_back(std::string(role->as_string()), std::move(content));
  }
  return messages;
}

Result<GenerationRequest> ParseChatRequest(std::string_view body) {
  auto obj = ParseObject(body);
  if (!obj.ok()) return obj.status();
  return ParseChatRequest(*obj);
}

Result<GenerationRequest> ParseChatRequest(const json::object& o) {
  GenerationRequest r;
  r.chat = true;
  if (Status s = ParseCommon(o, r); !s.ok()) return s;
  auto messages = ParseMessages(o.if_contains("messages"));
  if (!messages.ok()) return messages.status();
  r.prompt = Tokenize(engine::ApplyChatTemplate(*messages, /*add_generation_prompt=*/true));
  return r;
}

Status ResolveRequest(GenerationRequest& r, const std::string& served_model, int max_model_len) {
  if (!r.model.empty() && r.model != served_model) {
    // vLLM's wording (serving_engine.py, _check_model).
    return Status(ErrorCode::kNotFound, "The model `" + r.model + "` does not exist.")
        .WithParam("model");
  }
  const int prompt_len = static_cast<int>(r.prompt.size());
  if (!r.max_tokens) {
    r.max_tokens = r.chat ? max_model_len - prompt_len : 16;
  }
  const long long total = static_cast<long long>(prompt_len) + *r.max_tokens;
  if (prompt_len >= max_model_len || total > max_model_len) {
    // vLLM's wording (serving_engine.py, _validate_input).
    return InvalidArgument("This model's maximum context length is " +
                               std::to_string(max_model_len) + " tokens. However, you requested " +
                               std::to_string(total) + " tokens (" + std::to_string(prompt_len) +
                               " in the messages, " + std::to_string(*r.max_tokens) +
                               " in the completion). Please reduce the length of the messages or "
                               "completion.",
                           "max_tokens");
  }
  return Status::Ok();
}

std::string VllmErrorBody(const Status& status) {
  const int code = HttpStatusFor(status.code());
  const char* type = "InternalServerError";
  switch (status.code()) {
    case ErrorCode::kInvalidArgument:
      // vLLM: a request FastAPI could not validate (param "body...") is "Bad Request"
      // (the HTTP phrase); one its handlers refuse is "BadRequestError".
      type = status.param().starts_with("body") ? "Bad Request" : "BadRequestError";
      break;
    case ErrorCode::kNotFound:
      type = "NotFoundError";
      break;
    case ErrorCode::kPayloadTooLarge:
      type = "RequestEntityTooLarge";
      break;
    case ErrorCode::kUnavailable:
      type = "ServiceUnavailable";
      break;
    default:
      break;
  }
  json::object error{{"message", status.message()}, {"type", type}, {"code", code}};
  if (status.param().empty()) {
    error["param"] = nullptr;
  } else {
    error["param"] = status.param();
  }
  return json::serialize(json::object{{"error", std::move(error)}});
}

namespace {

json::object Envelope(const ResponseMeta& meta, std::string_view object) {
  return json::object{
      {"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

json::object UsageJson(const Usage& u, bool chat, bool stream) {
  json::object details{{"cached_tokens", u.cached_tokens}};
  if (chat) {
    details["created_cache_tokens"] = u.created_cache_tokens;
  } else if (!stream) {
    details["created_cache_tokens"] = nullptr;
  }
  json::object usage{{"prompt_tokens", u.prompt_tokens},
                     {"total_tokens", u.prompt_tokens + u.completion_tokens},
                     {"completion_tokens", u.completion_tokens}};
  if (!stream) details["multimodal_tokens"] = nullptr;
  usage["prompt_tokens_details"] = std::move(details);
  if (!stream) usage["completion_tokens_details"] = nullptr;
  return usage;
}

void SetNull(json::object& o, std::initializer_list<const char*> keys) {
  for (const char* k : keys) o[k] = nullptr;
}

}  // namespace

std::string FormatResponse(const ResponseMeta& meta, std::string_view text,
                           std::string_view finish_reason, const Usage& usage) {
  json::object choice{{"index", 0}};
  if (meta.chat) {
    json::object message{{"role", "assistant"}, {"content", text}};
    SetNull(message, {"refusal", "annotations", "audio", "function_call", "reasoning"});
    choice["message"] = std::move(message);
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason;
  SetNull(choice, {"stop_reason", "token_ids"});
  if (!meta.chat) SetNull(choice, {"prompt_logprobs", "prompt_token_ids"});
  choice["routed_experts"] = nullptr;
  json::object o = Envelope(meta, meta.chat ? "chat.completion" : "text_completion");
  o["choices"] = json::array{std::move(choice)};
  o["service_tier"] = nullptr;
  o["system_fingerprint"] = kSystemFingerprint;
  o["usage"] = UsageJson(usage, meta.chat, /*stream=*/false);
  if (meta.chat) SetNull(o, {"prompt_logprobs", "prompt_token_ids", "prompt_text"});
  SetNull(o, {"kv_transfer_params", "ec_transfer_params", "metrics"});
  return json::serialize(o);
}

std::string FormatRoleChunk(const ResponseMeta& meta) {
  json::object choice{{"index", 0},
                      {"delta", json::object{{"role", "assistant"}, {"content", ""}}},
                      {"logprobs", nullptr},
                      {"finish_reason", nullptr}};
  json::object o = Envelope(meta, "chat.completion.chunk");
  o["choices"] = json::array{std::move(choice)};
  SetNull(o, {"prompt_token_ids", "prompt_text"});
  return json::serialize(o);
}

std::string FormatTokenChunk(const ResponseMeta& meta, std::string_view text,
                             std::optional<std::string_view> finish_reason, bool last) {
  json::object choice{{"index", 0}};
  if (meta.chat) {
    choice["delta"] = json::object{{"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  if (finish_reason) {
    choice["finish_reason"] = *finish_reason;
  } else {
    choice["finish_reason"] = nullptr;
  }
  // vLLM: stop_reason on every completions chunk, on a chat chunk only with the finish.
  if (finish_reason || !meta.chat) choice["stop_reason"] = nullptr;
  if (!meta.chat) choice["prompt_token_ids"] = nullptr;
  choice["token_ids"] = nullptr;
  json::object o = Envelope(meta, meta.chat ? "chat.completion.chunk" : "text_completion");
  o["choices"] = json::array{std::move(choice)};
  if (last) o["system_fingerprint"] = kSystemFingerprint;
  return json::serialize(o);
}

std::string WithContinuousUsage(const std::string& chunk, int prompt_tokens,
                                int completion_tokens) {
  json::value v = json::parse(chunk);
  v.as_object()["usage"] = json::object{{"prompt_tokens", prompt_tokens},
                                        {"total_tokens", prompt_tokens + completion_tokens},
                                        {"completion_tokens", completion_tokens}};
  return json::serialize(v);
}

std::string FormatUsageChunk(const ResponseMeta& meta, const Usage& usage) {
  json::object o = Envelope(meta, meta.chat ? "chat.completion.chunk" : "text_completion");
  o["choices"] = json::array{};
  o["usage"] = UsageJson(usage, meta.chat, /*stream=*/true);
  o["system_fingerprint"] = kSystemFingerprint;
  return json::serialize(o);
}

}  // namespace kinference::enginesim
