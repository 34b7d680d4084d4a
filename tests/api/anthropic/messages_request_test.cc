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
                         "tools":[{"name":"get","input_schema":{"type":"object"}}],
                         "tool_choice":)" +
                     tc + "}")
        .at("tool_choice");
  };
  EXPECT_EQ(choice(R"({"type":"auto"})"), "auto");
  EXPECT_EQ(choice(R"({"type":"any"})"), "required");
  EXPECT_EQ(choice(R"({"type":"none"})"), "none");
  EXPECT_EQ(choice(R"({"type":"tool","name":"get"})"),
            json::parse(R"({"type":"function","function":{"name":"get"}})"));
}

// As the Messages API refuses them (400 invalid_request_error): a tool choice that needs
// tools without any, or naming a tool that is not there.
TEST(AnthropicRequest, ToolChoiceNeedingToolsIsRefusedWithoutThem) {
  const std::string base =
      R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],)";
  Status any = Error(base + R"("tool_choice":{"type":"any"}})");
  EXPECT_EQ(any.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(any.message().find("tool_choice"), std::string::npos) << any.message();
  Status tool = Error(base + R"("tool_choice":{"type":"tool","name":"get"}})");
  EXPECT_NE(tool.message().find("requires tools"), std::string::npos) << tool.message();
  Status unknown = Error(base + R"("tools":[{"name":"get","input_schema":{"type":"object"}}],)" +
                         R"("tool_choice":{"type":"tool","name":"put"}})");
  EXPECT_EQ(unknown.message(), "tool_choice.name: no tool named 'put' in tools");
  // auto and none need no tools.
  EXPECT_TRUE(TranslateRequest(base + R"("tool_choice":{"type":"auto"}})").ok());
  EXPECT_TRUE(TranslateRequest(base + R"("tool_choice":{"type":"none"}})").ok());
}

// thinking: budget_tokens >= 1024 and < max_tokens (API reference "Messages"); disabled
// and adaptive are accepted; the rest is 400.
TEST(AnthropicRequest, ThinkingBudgetIsCheckedAsTheApiDoes) {
  auto body = [](int max_tokens, const std::string& thinking) {
    return R"({"model":"m","max_tokens":)" + std::to_string(max_tokens) +
           R"(,"messages":[{"role":"user","content":"x"}],"thinking":)" + thinking + "}";
  };
  EXPECT_TRUE(TranslateRequest(body(4096, R"({"type":"enabled","budget_tokens":1024})")).ok());
  EXPECT_TRUE(TranslateRequest(body(16, R"({"type":"disabled"})")).ok());
  EXPECT_TRUE(TranslateRequest(body(16, R"({"type":"adaptive"})")).ok());
  EXPECT_EQ(Error(body(4096, R"({"type":"enabled","budget_tokens":1023})")).message(),
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
  EXPECT_EQ(Error(body(2048, R"({"type":"enabled","budget_tokens":2048})")).message(),
            "thinking.enabled.budget_tokens: must be less than max_tokens (2048)");
  EXPECT_EQ(Error(body(4096, R"({"type":"enabled"})")).message(),
            "thinking.enabled.budget_tokens: Field required");
  EXPECT_NE(Error(body(4096, R"({"type":"sometimes"})")).message().find("thinking.type"),
            std::string::npos);
  EXPECT_NE(Error(body(4096, R"("on")")).message().find("thinking"), std::string::npos);
}

// messages as a string: the message says the field must be a list, not that it is missing.
TEST(AnthropicRequest, MessagesAsAStringSaysItMustBeAList) {
  Status s = Error(R"({"model":"m","max_tokens":8,"messages":"hello"})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("messages: Input should be a valid list"), std::string::npos)
      << s.message();
  EXPECT_EQ(Error(R"({"model":"m","max_tokens":8})").message(), "messages: Field required");
  auto parsed = ParseMessages(R"({"model":"m","max_tokens":8,"messages":"hello"})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("valid list"), std::string::npos);
}

// document blocks: a text source (or content source) becomes a text part for an
// OpenAI-compatible backend, title first; a PDF is a 400 that says why.
TEST(AnthropicRequest, TextDocumentsBecomeTextAndPdfsAreRefusedClearly) {
  auto o = Translate(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":[
      {"type":"document","title":"Notes","source":{"type":"text","media_type":"text/plain",
       "data":"The sky is blue."}},
      {"type":"document","source":{"type":"content","content":[{"type":"text","text":"A"},
       {"type":"text","text":"B"}]}},
      {"type":"text","text":"Summarise."}]}]})");
  EXPECT_EQ(o.at("messages"), json::parse(R"([{"role":"user","content":[
      {"type":"text","text":"Notes\n\nThe sky is blue."},{"type":"text","text":"A\nB"},
      {"type":"text","text":"Summarise."}]}])"));
  auto parsed = ParseMessages(R"({"model":"m","max_tokens":8,"messages":[{"role":"user",
      "content":[{"type":"document","source":{"type":"text","media_type":"text/plain",
      "data":"x"}}]}]})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->untranslatable.ok());  // every endpoint may serve it
  Status pdf = Error(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":[
      {"type":"document","source":{"type":"base64","media_type":"application/pdf",
       "data":"JVBERi0="}}]}]})");
  EXPECT_NE(pdf.message().find("messages.0.content.0"), std::string::npos) << pdf.message();
  EXPECT_NE(pdf.message().find("PDF"), std::string::npos) << pdf.message();
  EXPECT_NE(pdf.message().find("OpenAI-compatible"), std::string::npos) << pdf.message();
}

// A stream asks a local vLLM pool for usage on every chunk (continuous_usage_stats), so
// message_start can report the prompt's tokens; a provider's body never carries it.
TEST(AnthropicRequest, StreamAsksPoolsOnlyForContinuousUsage) {
  auto parsed = ParseMessages(
      R"({"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->request.pool_continuous_usage);
  auto local = json::parse(UpstreamBody(parsed->request));
  EXPECT_EQ(local.at("stream_options").at("continuous_usage_stats"), true);
  EXPECT_EQ(local.at("stream_options").at("include_usage"), true);
  auto provider = json::parse(UpstreamBody(parsed->request, "gpt-x"));
  EXPECT_FALSE(provider.at("stream_options").as_object().contains("continuous_usage_stats"));
  auto whole =
      ParseMessages(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(json::parse(UpstreamBody(whole->request)).as_object().contains("stream_options"));
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
