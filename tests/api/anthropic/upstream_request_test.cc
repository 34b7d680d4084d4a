// OpenAI chat request -> Anthropic Messages request (api/anthropic/upstream_request.h).
#include "api/anthropic/upstream_request.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace kinference::api::anthropic {
namespace {

namespace json = boost::json;

json::object Build(const std::string& chat, int default_max = kDefaultMaxTokens) {
  auto r = BuildMessagesRequest(json::parse(chat).as_object(), {"claude-x", default_max});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? json::parse(*r).as_object() : json::object();
}

Status BuildError(const std::string& chat) {
  auto r = BuildMessagesRequest(json::parse(chat).as_object(), {"claude-x"});
  return r.ok() ? Status::Ok() : r.status();
}

TEST(UpstreamRequestTest, SystemUserAndSamplingFields) {
  json::object o = Build(R"({"model":"m","messages":[
      {"role":"system","content":"be brief"},
      {"role":"user","content":"hi"}],
    "max_completion_tokens":50,"max_tokens":10,"temperature":1.5,"top_p":0.9,
    "stop":"END","user":"u-1","stream":true,"stream_options":{"include_usage":true},
    "seed":3,"presence_penalty":1})");
  EXPECT_EQ(o.at("model"), "claude-x");
  EXPECT_EQ(o.at("system"), "be brief");
  EXPECT_EQ(o.at("max_tokens"), 50);                // max_completion_tokens wins
  EXPECT_EQ(o.at("temperature").as_double(), 1.0);  // clamped to Anthropic's range
  EXPECT_EQ(o.at("top_p").as_double(), 0.9);
  EXPECT_EQ(o.at("stop_sequences"), json::parse(R"(["END"])"));
  EXPECT_EQ(o.at("metadata"), json::parse(R"({"user_id":"u-1"})"));
  EXPECT_EQ(o.at("stream"), true);
  EXPECT_EQ(o.at("messages"),
            json::parse(R"([{"role":"user","content":[{"type":"text","text":"hi"}]}])"));
  for (const char* dropped : {"stream_options", "seed", "presence_penalty", "user", "stop"})
    EXPECT_FALSE(o.contains(dropped)) << dropped;
}

TEST(UpstreamRequestTest, DefaultMaxTokensAndSeveralSystemParts) {
  json::object o = Build(R"({"model":"m","messages":[
      {"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"developer","content":"c"},
      {"role":"user","content":[{"type":"text","text":"x"},
        {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},
        {"type":"image_url","image_url":{"url":"https://e.com/i.png"}}]}]})",
                         77);
  EXPECT_EQ(o.at("max_tokens"), 77);
  EXPECT_EQ(o.at("system"), json::parse(R"([{"type":"text","text":"a"},{"type":"text","text":"b"},
                                             {"type":"text","text":"c"}])"));
  EXPECT_EQ(o.at("messages").at(0).at("content"), json::parse(R"([{"type":"text","text":"x"},
      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},
      {"type":"image","source":{"type":"url","url":"https://e.com/i.png"}}])"));
  EXPECT_FALSE(o.contains("stream"));
}

TEST(UpstreamRequestTest, ToolsToolCallsAndToolResults) {
  json::object o = Build(R"({"model":"m","messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":"checking","tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"city\":\"Paris\"}"}},
        {"id":"call_2","type":"function","function":{"name":"now","arguments":""}}]},
      {"role":"tool","tool_call_id":"call_1","content":"sunny"},
      {"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"noon"}]},
      {"role":"user","content":"thanks"}],
    "tools":[{"type":"function","function":{"name":"get","description":"d",
                "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
             {"type":"function","function":{"name":"now"}}],
    "tool_choice":"required","parallel_tool_calls":false})");
  EXPECT_EQ(o.at("messages"), json::parse(R"([
    {"role":"user","content":[{"type":"text","text":"weather?"}]},
    {"role":"assistant","content":[{"type":"text","text":"checking"},
      {"type":"tool_use","id":"call_1","name":"get","input":{"city":"Paris"}},
      {"type":"tool_use","id":"call_2","name":"now","input":{}}]},
    {"role":"user","content":[
      {"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"sunny"}]},
      {"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"noon"}]},
      {"type":"text","text":"thanks"}]}])"));
  EXPECT_EQ(o.at("tools"), json::parse(R"([
    {"name":"get","description":"d","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},
    {"name":"now","input_schema":{"type":"object","properties":{}}}])"));
  EXPECT_EQ(o.at("tool_choice"), json::parse(R"({"type":"any","disable_parallel_tool_use":true})"));
}

TEST(UpstreamRequestTest, ToolChoiceForms) {
  const std::string base =
      R"({"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":)";
  EXPECT_EQ(Build(base + R"("auto"})").at("tool_choice"), json::parse(R"({"type":"auto"})"));
  EXPECT_EQ(Build(base + R"("none"})").at("tool_choice"), json::parse(R"({"type":"none"})"));
  EXPECT_EQ(Build(base + R"({"type":"function","function":{"name":"f"}}})").at("tool_choice"),
            json::parse(R"({"type":"tool","name":"f"})"));
  EXPECT_EQ(BuildError(base + R"("sometimes"})").param(), "tool_choice");
}

TEST(UpstreamRequestTest, RefusesWhatAnthropicCannotTake) {
  EXPECT_EQ(BuildError(R"({"model":"m","n":2,"messages":[{"role":"user","content":"x"}]})").param(),
            "n");
  Status audio = BuildError(
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]})");
  EXPECT_EQ(audio.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(audio.param(), "messages[0].content");
  EXPECT_EQ(BuildError(R"({"model":"m","messages":[{"role":"function","content":"x"}]})").param(),
            "messages[0].role");
  EXPECT_EQ(BuildError(R"({"model":"m","messages":[{"role":"assistant","tool_calls":[
      {"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]})")
                .param(),
            "messages[0].tool_calls");
}

TEST(UpstreamRequestTest, NativeBodyRewritesOnlyTheModel) {
  auto r = NativeRequestBody(
      json::parse(
          R"({"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[]})"),
      "claude-x");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(json::parse(*r), json::parse(R"({"model":"claude-x","max_tokens":5,
      "thinking":{"type":"enabled","budget_tokens":1024},"messages":[]})"));
  EXPECT_FALSE(NativeRequestBody(json::parse("[1]"), "x").ok());
}

}  // namespace
}  // namespace kinference::api::anthropic
