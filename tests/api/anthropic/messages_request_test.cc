// Anthropic Messages request -> OpenAI chat completion translation, and error shapes.
#include "api/anthropic/messages_request.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/openai/request.h"

namespace kinference::api::anthropic {
namespace {

namespace json = boost::json;

json::object Translate(const std::string& body) {
  auto r = TranslateRequest(body);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->openai_body : json::object();
}

Status Error(const std::string& body) {
  auto r = TranslateRequest(body);
  EXPECT_FALSE(r.ok()) << body;
  return r.status();
}

TEST(AnthropicRequest, SimpleMessageAndSamplingFields) {
  auto r = TranslateRequest(R"({"model":"m","max_tokens":64,"system":"Be terse.",
      "messages":[{"role":"user","content":"Hi"}],"temperature":0.5,"top_p":0.9,"top_k":40,
      "stop_sequences":["END","\n\n"],"metadata":{"user_id":"u-7"}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->model, "m");
  EXPECT_FALSE(r->stream);
  EXPECT_EQ(r->stop_sequences, (std::vector<std::string>{"END", "\n\n"}));
  const json::object& o = r->openai_body;
  EXPECT_EQ(o.at("model"), "m");
  EXPECT_EQ(o.at("max_tokens"), 64);
  EXPECT_EQ(o.at("temperature").as_double(), 0.5);
  EXPECT_EQ(o.at("top_p").as_double(), 0.9);
  EXPECT_EQ(o.at("top_k"), 40);
  EXPECT_EQ(o.at("stop"), (json::array{"END", "\n\n"}));
  EXPECT_EQ(o.at("user"), "u-7");
  EXPECT_FALSE(o.contains("stream_options"));
  EXPECT_EQ(o.at("messages"), json::parse(R"([{"role":"system","content":"Be terse."},
                                              {"role":"user","content":"Hi"}])"));
}

TEST(AnthropicRequest, StreamingAsksUpstreamForUsage) {
  auto o = Translate(
      R"({"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(o.at("stream"), true);
  EXPECT_EQ(o.at("stream_options").at("include_usage"), true);
}

TEST(AnthropicRequest, SystemBlocksAndTextBlocksBecomeTextParts) {
  auto o = Translate(R"({"model":"m","max_tokens":8,
      "system":[{"type":"text","text":"A"},{"type":"text","text":"B"}],
      "messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}]})");
  EXPECT_EQ(o.at("messages"), json::parse(R"([
      {"role":"system","content":[{"type":"text","text":"A"},{"type":"text","text":"B"}]},
      {"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}])"));
}

TEST(AnthropicRequest, ToolUseAndToolResultBecomeToolCallsAndToolMessages) {
  auto o = Translate(R"({"model":"m","max_tokens":8,
    "tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object",
              "properties":{"city":{"type":"string"}},"required":["city"]}}],
    "tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true},
    "messages":[
      {"role":"user","content":"Weather in Paris?"},
      {"role":"assistant","content":[{"type":"text","text":"Checking."},
         {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
      {"role":"user","content":[
         {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Sunny"}]},
         {"type":"tool_result","tool_use_id":"toolu_2","content":"boom","is_error":true},
         {"type":"text","text":"Thanks"}]}]})");
  EXPECT_EQ(o.at("tools"), json::parse(R"([{"type":"function","function":{"name":"get_weather",
      "description":"Weather","parameters":{"type":"object",
      "properties":{"city":{"type":"string"}},"required":["city"]}}}])"));
  EXPECT_EQ(o.at("tool_choice"),
            json::parse(R"({"type":"function","function":{"name":"get_weather"}})"));
  EXPECT_EQ(o.at("parallel_tool_calls"), false);
  const json::array& m = o.at("messages").as_array();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[1], json::parse(R"({"role":"assistant","content":[{"type":"text","text":"Checking."}],
      "tool_calls":[{"id":"toolu_1","type":"function",
                     "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]})"));
  EXPECT_EQ(m[2], json::parse(R"({"role":"tool","tool_call_id":"toolu_1","content":"Sunny"})"));
  EXPECT_EQ(m[3],
            json::parse(R"({"role":"tool","tool_call_id":"toolu_2","content":"Error: boom"})"));
  EXPECT_EQ(m[4], json::parse(R"({"role":"user","content":[{"type":"text","text":"Thanks"}]})"));
}

TEST(AnthropicRequest, AssistantWithOnlyToolUseHasNullContent) {
  auto o = Translate(R"({"model":"m","max_tokens":8,"messages":[
      {"role":"user","content":"go"},
      {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}]})");
  const json::array& m = o.at("messages").as_array();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_TRUE(m[1].at("content").is_null());
  EXPECT_EQ(m[1].at("tool_calls").at(0).at("function").at("arguments"), "{}");
  EXPECT_EQ(m[2], json::parse(R"({"role":"tool","tool_call_id":"t","content":""})"));
}

TEST(AnthropicRequest, ToolChoiceKinds) {
  auto choice = [](const std::string& tc) {
    return Translate(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
                         "tool_choice":)" +
                     tc + "}")
        .at("tool_choice");
  };
  EXPECT_EQ(choice(R"({"type":"auto"})"), "auto");
  EXPECT_EQ(choice(R"({"type":"any"})"), "required");
  EXPECT_EQ(choice(R"({"type":"none"})"), "none");
}

TEST(AnthropicRequest, RendersLikeTheEquivalentChatCompletion) {
  // The gateway routes on the OpenAI rendering of the translated body: same prefix text
  // as the chat completion a client would have sent directly.
  auto o = Translate(R"({"model":"m","max_tokens":8,"system":"S",
      "messages":[{"role":"user","content":"Hello"}]})");
  auto via_anthropic = ParseRequest(ApiKind::kChatCompletions, json::serialize(o));
  auto direct = ParseRequest(ApiKind::kChatCompletions, R"({"model":"m","max_tokens":8,
      "messages":[{"role":"system","content":"S"},{"role":"user","content":"Hello"}]})");
  ASSERT_TRUE(via_anthropic.ok() && direct.ok());
  EXPECT_EQ(via_anthropic->prompt_text, direct->prompt_text);
  EXPECT_EQ(via_anthropic->max_tokens, 8);
}

TEST(AnthropicRequest, InvalidRequestsNameTheField) {
  EXPECT_NE(Error("{\"model\": [").message().find("Invalid JSON"), std::string::npos);
  EXPECT_EQ(Error("[]").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Error(R"({"max_tokens":8,"messages":[]})").message(), "model: Field required");
  EXPECT_EQ(Error(R"({"model":"m","messages":[{"role":"user","content":"x"}]})").message(),
            "max_tokens: Field required");
  EXPECT_NE(Error(R"({"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]})")
                .message()
                .find("max_tokens"),
            std::string::npos);
  EXPECT_NE(Error(R"({"model":"m","max_tokens":8,"messages":[]})").message().find("messages"),
            std::string::npos);
  EXPECT_EQ(Error(R"({"model":"m","max_tokens":8,"messages":[{"role":"system","content":"x"}]})")
                .message(),
            "messages.0.role: must be 'user' or 'assistant'");
  Status image = Error(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":[
      {"type":"text","text":"look"},{"type":"image","source":{}}]}]})");
  EXPECT_NE(image.message().find("messages.0.content.1"), std::string::npos);
  EXPECT_NE(Error(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
                      "tools":[{"type":"web_search_20250305","name":"web_search"}]})")
                .message()
                .find("tools.0"),
            std::string::npos);
}

TEST(AnthropicErrors, TypesAndStatusCodes) {
  EXPECT_STREQ(ErrorType(ErrorCode::kInvalidArgument), "invalid_request_error");
  EXPECT_STREQ(ErrorType(ErrorCode::kUnauthenticated), "authentication_error");
  EXPECT_STREQ(ErrorType(ErrorCode::kPermissionDenied), "permission_error");
  EXPECT_STREQ(ErrorType(ErrorCode::kNotFound), "not_found_error");
  EXPECT_STREQ(ErrorType(ErrorCode::kPayloadTooLarge), "request_too_large");
  EXPECT_STREQ(ErrorType(ErrorCode::kResourceExhausted), "rate_limit_error");
  EXPECT_STREQ(ErrorType(ErrorCode::kInternal), "api_error");
  EXPECT_STREQ(ErrorType(ErrorCode::kUnavailable), "overloaded_error");
  EXPECT_EQ(ErrorHttpStatus(ErrorCode::kUnavailable), 529);
  EXPECT_EQ(ErrorHttpStatus(ErrorCode::kNotFound), 404);
  EXPECT_EQ(ErrorHttpStatus(ErrorCode::kPayloadTooLarge), 413);
  EXPECT_EQ(AnthropicStatusForUpstream(503), 529);
  EXPECT_STREQ(ErrorTypeForHttpStatus(503), "overloaded_error");
  EXPECT_STREQ(ErrorTypeForHttpStatus(422), "invalid_request_error");
  EXPECT_EQ(
      json::parse(ErrorBody(Status(ErrorCode::kNotFound, "no model"))),
      json::parse(R"({"type":"error","error":{"type":"not_found_error","message":"no model"}})"));
}

TEST(AnthropicErrors, StreamErrorEventIsReplacedKeepingOnlyADocumentedType) {
  auto own = ReplaceStreamError(
      R"({"type":"error","error":{"type":"overloaded_error","message":"host 10.0.0.9 sk-x"}})",
      "req-1");
  ASSERT_TRUE(own.has_value());
  json::value v = json::parse(*own);
  EXPECT_EQ(v.at("type"), "error");
  EXPECT_EQ(v.at("error").at("type"), "overloaded_error");
  EXPECT_EQ(v.at("error").at("message"),
            "The provider reported overloaded_error during the stream; request id req-1.");
  // An undocumented type (it could carry anything) becomes api_error.
  own = ReplaceStreamError(R"({"type":"error","error":{"type":"at 10.0.0.9"}})", "r");
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(json::parse(*own).at("error").at("type"), "api_error");
  EXPECT_EQ(own->find("10.0.0.9"), std::string::npos);
  own = ReplaceStreamError(R"({"type":"error"})", "r");
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(json::parse(*own).at("error").at("type"), "api_error");
  // Not an error object: left alone.
  EXPECT_FALSE(ReplaceStreamError(R"({"type":"ping"})", "r").has_value());
  EXPECT_FALSE(ReplaceStreamError("not json", "r").has_value());
  EXPECT_FALSE(ReplaceStreamError("", "r").has_value());
}

}  // namespace
}  // namespace kinference::api::anthropic
