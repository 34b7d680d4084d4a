#include "api/anthropic/upstream_response.h"

#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "api/json_body.h"

namespace kinference::api::anthropic {
namespace json = boost::json;
namespace {

using api::IntOr0;
using api::StringOr;

const json::object* ObjectAt(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? v->if_object() : nullptr;
}

json::object OpenAiUsage(int64_t input, int64_t cache_read, int64_t cache_creation,
                         int64_t output) {
  const int64_t prompt = input + cache_read + cache_creation;
  return json::object{{"prompt_tokens", prompt},
                      {"completion_tokens", output},
                      {"total_tokens", prompt + output},
                      {"prompt_tokens_details", json::object{{"cached_tokens", cache_read}}}};
}

std::string OpenAiError(int status, std::string_view type, std::string_view message) {
  return json::serialize(json::object{
      {"error",
       json::object{{"message", message}, {"type", type}, {"param", nullptr}, {"code", status}}}});
}

// OpenAI status for an Anthropic error status: 529 overloaded_error has no OpenAI
// counterpart; 503 is what OpenAI-compatible servers answer when overloaded.
int OpenAiStatus(int status) { return status == 529 ? 503 : status; }

}  // namespace

std::string FinishReason(std::string_view stop_reason) {
  if (stop_reason == "max_tokens" || stop_reason == "model_context_window_exceeded")
    return "length";
  if (stop_reason == "tool_use") return "tool_calls";
  if (stop_reason == "refusal") return "content_filter";
  return "stop";  // end_turn, stop_sequence, pause_turn
}

OpenAiResponse MessagesResponseToOpenAi(int status, std::string_view body, int64_t created) {
  json::error_code ec;
  json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  if (status != 200) {
    const json::object* e = o ? ObjectAt(*o, "error") : nullptr;
    std::string type = e ? StringOr(*e, "type", "api_error") : "api_error";
    // A body without a JSON error message is not quoted (see messages_response.cc).
    std::string fallback =
        fmt::format("upstream answered HTTP {} without an error message", status);
    std::string message = e ? StringOr(*e, "message", fallback) : fallback;
    int out = OpenAiStatus(status);
    return {out, OpenAiError(out, type, message)};
  }
  const json::value* content = o ? o->if_contains("content") : nullptr;
  if (!content || !content->is_array()) {
    return {502, OpenAiError(502, "api_error", "upstream answered 200 without a message")};
  }
  std::string text, reasoning;
  json::array tool_calls;
  for (const auto& b : content->get_array()) {
    const auto* block = b.if_object();
    if (!block) continue;
    const std::string type = StringOr(*block, "type");
    if (type == "text") {
      text += StringOr(*block, "text");
    } else if (type == "thinking") {
      reasoning += StringOr(*block, "thinking");
    } else if (type == "tool_use") {
      const auto* input = block->if_contains("input");
      tool_calls.push_back(json::object{
          {"id", StringOr(*block, "id")},
          {"type", "function"},
          {"function", json::object{{"name", StringOr(*block, "name")},
                                    {"arguments", input ? json::serialize(*input) : "{}"}}}});
    }
  }
  json::object message{{"role", "assistant"}};
  message["content"] =
      text.empty() && !tool_calls.empty() ? json::value(nullptr) : json::value(text);
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  if (!tool_calls.empty()) message["tool_calls"] = std::move(tool_calls);
  const json::object* u = ObjectAt(*o, "usage");
  json::object usage =
      u ? OpenAiUsage(IntOr0(*u, "input_tokens"), IntOr0(*u, "cache_read_input_tokens"),
                      IntOr0(*u, "cache_creation_input_tokens"), IntOr0(*u, "output_tokens"))
        : OpenAiUsage(0, 0, 0, 0);
  json::object out{{"id", StringOr(*o, "id")},
                   {"object", "chat.completion"},
                   {"created", created},
                   {"model", StringOr(*o, "model")},
                   {"choices", json::array{json::object{
                                   {"index", 0},
                                   {"message", std::move(message)},
                                   {"logprobs", nullptr},
                                   {"finish_reason", FinishReason(StringOr(*o, "stop_reason"))}}}},
                   {"usage", std::move(usage)}};
  return {200, json::serialize(out)};
}

std::string MessagesStreamDecoder::Chunk(std::string delta_json, const char* finish_reason) const {
  json::object chunk{
      {"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", model_}};
  // The delta is spliced in as JSON text (callers build small objects).
  std::string out = json::serialize(chunk);
  out.pop_back();
  out += ",\"choices\":[{\"index\":0,\"delta\":" + delta_json +
         ",\"logprobs\":null,\"finish_reason\":" +
         (finish_reason ? json::serialize(json::value(finish_reason)) : std::string("null")) +
         "}]}";
  return out;
}

api::SseEvent MessagesStreamDecoder::Error(std::string_view type, std::string_view message) {
  failed_ = true;
  finished_ = true;
  // The gateway's mid-stream error event (gateway/exchange/proxy.h): data: {"error":{...}}, with
  // the code the same failure gets unstreamed: 502 (bad gateway: the upstream failed or its stream
  // is broken), 503 for overloaded_error (as 529 maps whole).
  return api::SseEvent{"", OpenAiError(type == "overloaded_error" ? 503 : 502, type, message)};
}

std::vector<api::SseEvent> MessagesStreamDecoder::OnEvent(const api::SseEvent& event) {
  if (finished_) return {};
  json::error_code ec;
  json::value v = json::parse(event.data, ec);
  if (ec || !v.is_object()) return {};
  const json::object& o = v.get_object();
  const std::string type = StringOr(o, "type", event.event);
  auto data = [](std::string s) { return std::vector<api::SseEvent>{{"", std::move(s)}}; };
  auto read_usage = [this](const json::object* u) {
    if (!u) return;
    // message_delta's counts are cumulative: present fields replace earlier ones.
    if (u->contains("input_tokens")) input_ = IntOr0(*u, "input_tokens");
    if (u->contains("cache_read_input_tokens")) cache_read_ = IntOr0(*u, "cache_read_input_tokens");
    if (u->contains("cache_creation_input_tokens"))
      cache_creation_ = IntOr0(*u, "cache_creation_input_tokens");
    if (u->contains("output_tokens")) output_ = IntOr0(*u, "output_tokens");
  };

  if (type == "message_start") {
    if (const json::object* m = ObjectAt(o, "message")) {
      id_ = StringOr(*m, "id", id_);
      model_ = StringOr(*m, "model");
      read_usage(ObjectAt(*m, "usage"));
    }
    return data(Chunk(R"({"role":"assistant","content":""})", nullptr));
  }
  if (type == "content_block_start") {
    const json::object* b = ObjectAt(o, "content_block");
    if (!b || StringOr(*b, "type") != "tool_use") return {};
    const int index = static_cast<int>(tool_index_.size());
    tool_index_[IntOr0(o, "index")] = index;
    json::object call{
        {"index", index},
        {"id", StringOr(*b, "id")},
        {"type", "function"},
        {"function", json::object{{"name", StringOr(*b, "name")}, {"arguments", ""}}}};
    return data(Chunk(json::serialize(json::object{{"tool_calls", json::array{std::move(call)}}}),
                      nullptr));
  }
  if (type == "content_block_delta") {
    const json::object* d = ObjectAt(o, "delta");
    if (!d) return {};
    const std::string dt = StringOr(*d, "type");
    if (dt == "text_delta") {
      return data(Chunk(json::serialize(json::object{{"content", StringOr(*d, "text")}}), nullptr));
    }
    if (dt == "thinking_delta") {
      return data(Chunk(
          json::serialize(json::object{{"reasoning_content", StringOr(*d, "thinking")}}), nullptr));
    }
    if (dt == "input_json_delta") {
      auto it = tool_index_.find(IntOr0(o, "index"));
      if (it == tool_index_.end()) return {};
      json::object call{{"index", it->second},
                        {"function", json::object{{"arguments", StringOr(*d, "partial_json")}}}};
      return data(Chunk(json::serialize(json::object{{"tool_calls", json::array{std::move(call)}}}),
                        nullptr));
    }
    return {};  // signature_delta, citations_delta, ...
  }
  if (type == "message_delta") {
    read_usage(ObjectAt(o, "usage"));
    const json::object* d = ObjectAt(o, "delta");
    std::string reason = FinishReason(d ? StringOr(*d, "stop_reason") : std::string());
    return data(Chunk("{}", reason.c_str()));
  }
  if (type == "message_stop") {
    finished_ = true;
    json::object usage{{"id", id_},
                       {"object", "chat.completion.chunk"},
                       {"created", created_},
                       {"model", model_},
                       {"choices", json::array()},
                       {"usage", OpenAiUsage(input_, cache_read_, cache_creation_, output_)}};
    return {{"", json::serialize(usage)}, {"", "[DONE]"}};
  }
  if (type == "error") {
    const json::object* e = ObjectAt(o, "error");
    return {Error(e ? StringOr(*e, "type", "api_error") : "api_error",
                  e ? StringOr(*e, "message", "upstream error") : "upstream error")};
  }
  return {};  // ping, content_block_stop, and event types added later
}

std::vector<api::SseEvent> MessagesStreamDecoder::OnEnd() {
  if (finished_) return {};
  return {Error("api_error", "upstream stream ended before message_stop")};
}

}  // namespace kinference::api::anthropic
