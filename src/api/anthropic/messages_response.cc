#include "api/anthropic/messages_response.h"

#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "api/anthropic/messages_request.h"
#include "api/json_body.h"
#include "api/sse.h"

namespace kinference::api::anthropic {
namespace json = boost::json;
namespace {

using api::IntOr0;
using api::StringOr;

std::string MessageId(std::string_view upstream_id) {
  constexpr std::string_view kPrefix = "chatcmpl-";
  if (upstream_id.substr(0, kPrefix.size()) == kPrefix) upstream_id.remove_prefix(kPrefix.size());
  return "msg_" + std::string(upstream_id.empty() ? "kinference" : upstream_id);
}

json::object Usage(int64_t prompt, int64_t cached, int64_t completion) {
  return json::object{{"input_tokens", prompt - cached},
                      {"cache_creation_input_tokens", 0},
                      {"cache_read_input_tokens", cached},
                      {"output_tokens", completion}};
}

// vLLM's choice field `stop_reason`: the matched stop string (or a stop token id).
std::optional<std::string> VllmStop(const json::object& choice) {
  const auto* v = choice.if_contains("stop_reason");
  if (v && v->is_string()) return std::string(v->get_string());
  return std::nullopt;
}

// The message of an OpenAI error body ({"error":{"message"}} or vLLM's flat
// {"object":"error","message"}), else the body itself.
// The message of an upstream error body: its JSON error message (a JSON string, so valid
// UTF-8), or the gateway's own words when the body has none. A body that is not JSON
// (a proxy's HTML page, bytes that are not UTF-8) is never quoted: serialised into the
// client's JSON it could make that JSON invalid (found by fuzzing,
// fuzz/anthropic_response_fuzz.cc) or show the client an upstream's internals.
constexpr const char* kUpstreamStreamFailed = "The model server failed during the stream.";

std::string UpstreamErrorMessage(int status, std::string_view body) {
  std::string fallback = fmt::format("upstream answered HTTP {} without an error message", status);
  json::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    const json::object& o = v.get_object();
    if (const auto* e = o.if_contains("error"); e && e->is_object())
      return StringOr(e->get_object(), "message", fallback);
    if (o.contains("message")) return StringOr(o, "message", fallback);
  }
  return fallback;
}

json::value ParseToolInput(std::string_view arguments) {
  json::error_code ec;
  json::value v = json::parse(arguments, ec);
  if (ec || !v.is_object()) return json::object();
  return v;
}

std::string Event(std::string_view type, const json::object& data) {
  return api::FormatSse(json::serialize(data), type);
}

// Whether a chunk's choice 0 has anything to translate: text, tool calls or a finish.
bool HasPayload(const json::value* choices) {
  if (!choices || !choices->is_array()) return false;
  for (const auto& c : choices->get_array()) {
    const auto* choice = c.if_object();
    if (!choice || IntOr0(*choice, "index") != 0) continue;
    if (const auto* fr = choice->if_contains("finish_reason"); fr && fr->is_string()) return true;
    const auto* d = choice->if_contains("delta");
    const json::object* delta = d ? d->if_object() : nullptr;
    if (!delta) continue;
    if (!StringOr(*delta, "content").empty()) return true;
    const auto* tcs = delta->if_contains("tool_calls");
    if (tcs && tcs->is_array() && !tcs->get_array().empty()) return true;
  }
  return false;
}

}  // namespace

std::string StopReason(std::string_view finish_reason, const std::optional<std::string>& vllm_stop,
                       std::optional<std::string>& stop_sequence) {
  stop_sequence.reset();
  if (finish_reason == "stop" && vllm_stop) {
    stop_sequence = vllm_stop;
    return "stop_sequence";
  }
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason == "tool_calls" || finish_reason == "function_call") return "tool_use";
  if (finish_reason == "content_filter") return "refusal";
  return "end_turn";
}

TranslatedResponse TranslateResponse(int upstream_status, std::string_view body,
                                     const ResponseContext& ctx) {
  if (upstream_status != 200) {
    return {AnthropicStatusForUpstream(upstream_status),
            ErrorBody(ErrorTypeForHttpStatus(upstream_status),
                      UpstreamErrorMessage(upstream_status, body))};
  }
  json::error_code ec;
  json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::value* choices = o ? o->if_contains("choices") : nullptr;
  if (!choices || !choices->is_array() || choices->get_array().empty() ||
      !choices->get_array()[0].is_object()) {
    return {502, ErrorBody("api_error", "upstream answered without a chat completion choice")};
  }
  const json::object& choice = choices->get_array()[0].get_object();
  json::array content;
  if (const auto* m = choice.if_contains("message"); m && m->is_object()) {
    const json::object& msg = m->get_object();
    if (std::string text = StringOr(msg, "content"); !text.empty())
      content.push_back(json::object{{"type", "text"}, {"text", text}});
    if (const auto* tcs = msg.if_contains("tool_calls"); tcs && tcs->is_array()) {
      for (const auto& tc : tcs->get_array()) {
        if (!tc.is_object()) continue;
        const auto* fn = tc.get_object().if_contains("function");
        if (!fn || !fn->is_object()) continue;
        content.push_back(
            json::object{{"type", "tool_use"},
                         {"id", StringOr(tc.get_object(), "id")},
                         {"name", StringOr(fn->get_object(), "name")},
                         {"input", ParseToolInput(StringOr(fn->get_object(), "arguments"))}});
      }
    }
  }
  std::optional<std::string> stop_sequence;
  std::string stop_reason =
      StopReason(StringOr(choice, "finish_reason", "stop"), VllmStop(choice), stop_sequence);
  int64_t prompt = 0, cached = 0, completion = 0;
  if (const auto* u = o->if_contains("usage"); u && u->is_object()) {
    prompt = IntOr0(u->get_object(), "prompt_tokens");
    completion = IntOr0(u->get_object(), "completion_tokens");
    if (const auto* d = u->get_object().if_contains("prompt_tokens_details"); d && d->is_object())
      cached = IntOr0(d->get_object(), "cached_tokens");
  }
  json::object out{{"id", MessageId(StringOr(*o, "id"))},
                   {"type", "message"},
                   {"role", "assistant"},
                   {"model", ctx.model},
                   {"content", std::move(content)},
                   {"stop_reason", stop_reason},
                   {"stop_sequence", nullptr},
                   {"usage", Usage(prompt, cached, completion)}};
  if (stop_sequence) out["stop_sequence"] = *stop_sequence;
  return {200, json::serialize(out)};
}

std::string StreamTranslator::Start() {
  started_ = true;
  json::object message{{"id", MessageId(upstream_id_)},
                       {"type", "message"},
                       {"role", "assistant"},
                       {"model", ctx_.model},
                       {"content", json::array()},
                       {"stop_reason", nullptr},
                       {"stop_sequence", nullptr},
                       {"usage", Usage(prompt_tokens_, cached_tokens_, completion_tokens_)}};
  return Event("message_start",
               json::object{{"type", "message_start"}, {"message", std::move(message)}});
}

std::string StreamTranslator::OpenBlock(std::string block_json, bool tool, int tool_index) {
  std::string out = CloseBlock();
  open_block_ = next_block_++;
  open_is_tool_ = tool;
  open_tool_index_ = tool_index;
  out +=
      api::FormatSse("{\"type\":\"content_block_start\",\"index\":" + std::to_string(open_block_) +
                         ",\"content_block\":" + block_json + "}",
                     "content_block_start");
  if (!pinged_) {
    pinged_ = true;
    out += api::FormatSse("{\"type\":\"ping\"}", "ping");
  }
  return out;
}

std::string StreamTranslator::CloseBlock() {
  if (open_block_ < 0) return {};
  std::string out = Event("content_block_stop",
                          json::object{{"type", "content_block_stop"}, {"index", open_block_}});
  open_block_ = -1;
  open_tool_index_ = -1;
  return out;
}

std::string StreamTranslator::Finish() {
  std::string out = CloseBlock();
  if (!pinged_) {
    pinged_ = true;
    out += api::FormatSse("{\"type\":\"ping\"}", "ping");
  }
  std::optional<std::string> stop_sequence;
  std::string stop_reason = StopReason(finish_reason_.value_or("stop"), vllm_stop_, stop_sequence);
  json::object delta{{"stop_reason", stop_reason}, {"stop_sequence", nullptr}};
  if (stop_sequence) delta["stop_sequence"] = *stop_sequence;
  out += Event("message_delta",
               json::object{{"type", "message_delta"},
                            {"delta", std::move(delta)},
                            {"usage", Usage(prompt_tokens_, cached_tokens_, completion_tokens_)}});
  out += Event("message_stop", json::object{{"type", "message_stop"}});
  done_ = true;
  return out;
}

std::string StreamTranslator::Error(std::string_view type, std::string_view message) {
  done_ = true;
  failed_ = true;
  return api::FormatSse(ErrorBody(type, message), "error");
}

std::string StreamTranslator::OnData(std::string_view data) {
  if (done_) return {};
  if (data == "[DONE]") {
    std::string out = started_ ? std::string() : Start();
    return out + Finish();
  }
  json::error_code ec;
  json::value v = json::parse(data, ec);
  if (ec || !v.is_object()) return {};  // not a chunk; nothing to relay
  const json::object& o = v.get_object();
  std::string out;
  if (!started_ && upstream_id_.empty()) upstream_id_ = StringOr(o, "id");
  // An upstream error event: the gateway's words, not the upstream's (they may carry a key
  // or an internal address; the gateway logs them).
  if (const auto* e = o.if_contains("error");
      (e && e->is_object()) || StringOr(o, "object") == "error") {
    if (!started_) out += Start();
    return out + Error("api_error", kUpstreamStreamFailed);
  }
  const auto* u = o.if_contains("usage");
  if (u && u->is_object()) {
    const json::object& usage = u->get_object();
    prompt_tokens_ = static_cast<int>(IntOr0(usage, "prompt_tokens"));
    completion_tokens_ = static_cast<int>(IntOr0(usage, "completion_tokens"));
    cached_tokens_ = 0;
    if (const auto* d = usage.if_contains("prompt_tokens_details"); d && d->is_object())
      cached_tokens_ = static_cast<int>(IntOr0(d->get_object(), "cached_tokens"));
  }
  const auto* choices = o.if_contains("choices");
  // message_start waits for the first chunk with usage (a vLLM pool asked for
  // continuous_usage_stats sends it on its first chunk) or with something to emit, so a
  // usage-less role chunk does not start the message with input_tokens 0.
  if (!started_) {
    if (!(u && u->is_object()) && !HasPayload(choices)) return out;
    out += Start();
  }
  if (!choices || !choices->is_array()) return out;
  for (const auto& c : choices->get_array()) {
    const auto* choice = c.if_object();
    if (!choice || IntOr0(*choice, "index") != 0) continue;  // n=1: choice 0 only
    if (const auto* d = choice->if_contains("delta"); d && d->is_object()) {
      const json::object& delta = d->get_object();
      if (std::string text = StringOr(delta, "content"); !text.empty()) {
        if (open_block_ < 0 || open_is_tool_)
          out += OpenBlock(R"({"type":"text","text":""})", false, -1);
        out += Event("content_block_delta",
                     json::object{{"type", "content_block_delta"},
                                  {"index", open_block_},
                                  {"delta", json::object{{"type", "text_delta"}, {"text", text}}}});
      }
      const auto* tcs = delta.if_contains("tool_calls");
      for (const auto& tc : tcs && tcs->is_array() ? tcs->get_array() : json::array()) {
        if (!tc.is_object()) continue;
        const json::object& call = tc.get_object();
        const int tool_index = static_cast<int>(IntOr0(call, "index"));
        const auto* fn = call.if_contains("function");
        const json::object* f = fn && fn->is_object() ? &fn->get_object() : nullptr;
        // A new OpenAI tool call (a new index) starts a new tool_use block.
        if (!open_is_tool_ || open_block_ < 0 || tool_index != open_tool_index_) {
          json::object block{{"type", "tool_use"},
                             {"id", StringOr(call, "id")},
                             {"name", f ? StringOr(*f, "name") : std::string()},
                             {"input", json::object()}};
          out += OpenBlock(json::serialize(block), true, tool_index);
        }
        if (std::string args = f ? StringOr(*f, "arguments") : std::string(); !args.empty()) {
          out += Event("content_block_delta",
                       json::object{{"type", "content_block_delta"},
                                    {"index", open_block_},
                                    {"delta", json::object{{"type", "input_json_delta"},
                                                           {"partial_json", args}}}});
        }
      }
    }
    if (const auto* fr = choice->if_contains("finish_reason"); fr && fr->is_string()) {
      finish_reason_ = std::string(fr->get_string());
      vllm_stop_ = VllmStop(*choice);
    }
  }
  return out;
}

std::string StreamTranslator::OnEnd() {
  if (done_) return {};
  std::string out = started_ ? std::string() : Start();
  if (finish_reason_) return out + Finish();
  return out + Error("api_error", "upstream stream ended before the response finished");
}

std::string StreamTranslator::OnError(const Status& status, bool upstream_failure) {
  if (done_) return {};
  std::string out = started_ ? std::string() : Start();
  // A failed upstream mid-stream is a server-side error, not a capacity signal.
  const char* type = upstream_failure && status.code() == ErrorCode::kUnavailable
                         ? "api_error"
                         : ErrorType(status.code());
  return out + Error(type, status.message());
}

}  // namespace kinference::api::anthropic
