// Anthropic Messages responses and streams -> OpenAI (api/anthropic/upstream_response.h).
#include "api/anthropic/upstream_response.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace kinference::api::anthropic {
namespace {

namespace json = boost::json;

TEST(UpstreamResponseTest, WholeMessageWithToolUseThinkingAndCacheUsage) {
  auto r = MessagesResponseToOpenAi(200, R"({"id":"msg_1","type":"message","role":"assistant",
      "model":"claude-x","content":[
        {"type":"thinking","thinking":"hmm","signature":"sig"},
        {"type":"text","text":"Let me ","citations":[]},{"type":"text","text":"check."},
        {"type":"tool_use","id":"toolu_1","name":"get","input":{"city":"Paris"}}],
      "stop_reason":"tool_use","stop_sequence":null,
      "usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,
               "output_tokens":7}})",
                                    1234);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"id":"msg_1","object":"chat.completion",
      "created":1234,"model":"claude-x","choices":[{"index":0,"message":{"role":"assistant",
        "content":"Let me check.","reasoning_content":"hmm","tool_calls":[{"id":"toolu_1",
        "type":"function","function":{"name":"get","arguments":"{\"city\":\"Paris\"}"}}]},
        "logprobs":null,"finish_reason":"tool_calls"}],
      "usage":{"prompt_tokens":115,"completion_tokens":7,"total_tokens":122,
               "prompt_tokens_details":{"cached_tokens":100}}})"));
}

TEST(UpstreamResponseTest, StopReasons) {
  EXPECT_EQ(FinishReason("end_turn"), "stop");
  EXPECT_EQ(FinishReason("stop_sequence"), "stop");
  EXPECT_EQ(FinishReason("max_tokens"), "length");
  EXPECT_EQ(FinishReason("tool_use"), "tool_calls");
  EXPECT_EQ(FinishReason("refusal"), "content_filter");
  EXPECT_EQ(FinishReason("pause_turn"), "stop");
}

TEST(UpstreamResponseTest, ErrorsMapToOpenAiShape) {
  auto r = MessagesResponseToOpenAi(
      529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})", 0);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"error":{"message":"Overloaded",
      "type":"overloaded_error","param":null,"code":503}})"));
  auto auth = MessagesResponseToOpenAi(
      401,
      R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})",
      0);
  EXPECT_EQ(auth.status, 401);
  EXPECT_EQ(json::parse(auth.body).at("error").at("type"), "authentication_error");
  EXPECT_EQ(MessagesResponseToOpenAi(200, "not json", 0).status, 502);
}

// A provider's error body that is not JSON is not quoted to the client (valid JSON, the
// gateway's words; see messages_response.cc).
TEST(UpstreamResponseTest, ErrorBodyThatIsNotJsonIsNotQuoted) {
  auto r = MessagesResponseToOpenAi(500, "\xff\xfe<h1>upstream 10.0.0.7 down</h1>", 0);
  EXPECT_EQ(r.status, 500);
  boost::system::error_code ec;
  auto v = json::parse(r.body, ec);
  ASSERT_FALSE(ec) << r.body;
  EXPECT_EQ(v.at("error").at("message"), "upstream answered HTTP 500 without an error message");
  EXPECT_EQ(r.body.find("10.0.0.7"), std::string::npos);
}

std::vector<std::string> Feed(MessagesStreamDecoder& d, const std::string& event,
                              const std::string& data) {
  std::vector<std::string> out;
  for (const auto& e : d.OnEvent({event, data})) out.push_back(e.data);
  return out;
}

TEST(UpstreamResponseTest, StreamTextToolUseAndUsage) {
  MessagesStreamDecoder d(99);
  auto start = Feed(d, "message_start", R"({"type":"message_start","message":{"id":"msg_1",
      "type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,
      "usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":20,
               "output_tokens":1}}})");
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(json::parse(start[0]), json::parse(R"({"id":"msg_1","object":"chat.completion.chunk",
      "created":99,"model":"claude-x","choices":[{"index":0,"delta":{"role":"assistant","content":""},
      "logprobs":null,"finish_reason":null}]})"));
  EXPECT_TRUE(
      Feed(d, "content_block_start",
           R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})")
          .empty());
  EXPECT_TRUE(Feed(d, "ping", R"({"type":"ping"})").empty());
  auto text =
      Feed(d, "content_block_delta",
           R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})");
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(json::parse(text[0]).at("choices").at(0).at("delta"),
            json::parse(R"({"content":"Hi"})"));
  EXPECT_TRUE(Feed(d, "content_block_stop", R"({"type":"content_block_stop","index":0})").empty());
  auto tool = Feed(d, "content_block_start", R"({"type":"content_block_start","index":1,
      "content_block":{"type":"tool_use","id":"toolu_1","name":"get","input":{}}})");
  ASSERT_EQ(tool.size(), 1u);
  EXPECT_EQ(json::parse(tool[0]).at("choices").at(0).at("delta"),
            json::parse(R"({"tool_calls":[{"index":0,"id":"toolu_1","type":"function",
                "function":{"name":"get","arguments":""}}]})"));
  auto args = Feed(d, "content_block_delta", R"({"type":"content_block_delta","index":1,
      "delta":{"type":"input_json_delta","partial_json":"{\"city\":"}})");
  ASSERT_EQ(args.size(), 1u);
  EXPECT_EQ(json::parse(args[0]).at("choices").at(0).at("delta"),
            json::parse(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]})"));
  auto fin = Feed(d, "message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use",
      "stop_sequence":null},"usage":{"output_tokens":15}})");
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(json::parse(fin[0]).at("choices").at(0).at("finish_reason"), "tool_calls");
  auto stop = Feed(d, "message_stop", R"({"type":"message_stop"})");
  ASSERT_EQ(stop.size(), 2u);
  EXPECT_EQ(json::parse(stop[0]).at("choices"), json::array());
  EXPECT_EQ(json::parse(stop[0]).at("usage"), json::parse(R"({"prompt_tokens":30,
      "completion_tokens":15,"total_tokens":45,"prompt_tokens_details":{"cached_tokens":20}})"));
  EXPECT_EQ(stop[1], "[DONE]");
  EXPECT_TRUE(d.finished());
  EXPECT_FALSE(d.failed());
  EXPECT_TRUE(d.OnEnd().empty());
}

TEST(UpstreamResponseTest, StreamThinkingDeltaAndCumulativeUsageInMessageDelta) {
  MessagesStreamDecoder d(0);
  Feed(d, "message_start", R"({"type":"message_start","message":{"id":"m","model":"c",
      "usage":{"input_tokens":0,"output_tokens":0}}})");
  auto think = Feed(d, "content_block_delta", R"({"type":"content_block_delta","index":0,
      "delta":{"type":"thinking_delta","thinking":"so"}})");
  ASSERT_EQ(think.size(), 1u);
  EXPECT_EQ(json::parse(think[0]).at("choices").at(0).at("delta"),
            json::parse(R"({"reasoning_content":"so"})"));
  EXPECT_TRUE(Feed(d, "content_block_delta", R"({"type":"content_block_delta","index":0,
      "delta":{"type":"signature_delta","signature":"x"}})")
                  .empty());
  Feed(d, "message_delta", R"({"type":"message_delta","delta":{"stop_reason":"max_tokens"},
      "usage":{"input_tokens":4,"cache_read_input_tokens":6,"cache_creation_input_tokens":2,
               "output_tokens":3}})");
  auto stop = Feed(d, "message_stop", R"({"type":"message_stop"})");
  EXPECT_EQ(json::parse(stop[0]).at("usage").at("prompt_tokens"), 12);
  EXPECT_EQ(json::parse(stop[0]).at("usage").at("prompt_tokens_details").at("cached_tokens"), 6);
}

TEST(UpstreamResponseTest, StreamErrorsAndTruncation) {
  MessagesStreamDecoder d(0);
  auto err = Feed(d, "error",
                  R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  ASSERT_EQ(err.size(), 1u);
  EXPECT_EQ(json::parse(err[0]).at("error").at("type"), "overloaded_error");
  EXPECT_TRUE(d.failed());
  EXPECT_TRUE(Feed(d, "message_stop", R"({"type":"message_stop"})").empty());

  MessagesStreamDecoder cut(0);
  Feed(cut, "message_start", R"({"type":"message_start","message":{"id":"m"}})");
  auto end = cut.OnEnd();
  ASSERT_EQ(end.size(), 1u);
  EXPECT_NE(end[0].data.find("before message_stop"), std::string::npos);
  EXPECT_TRUE(cut.failed());
}

}  // namespace
}  // namespace kinference::api::anthropic
