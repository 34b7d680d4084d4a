// OpenAI chat completion (whole or streamed) -> Anthropic message (whole or event stream).
#include "api/anthropic/messages_response.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <utility>

#include "api/sse.h"

namespace kinference::api::anthropic {
namespace {

namespace json = boost::json;

ResponseContext Ctx() { return ResponseContext{"claude-local", {"END"}}; }

// Parses Anthropic SSE bytes into (event name, data); checks data.type == event name.
std::vector<std::pair<std::string, json::object>> Parse(const std::string& sse) {
  std::vector<std::pair<std::string, json::object>> out;
  api::SseParser parser;
  parser.Feed(sse, [&](const api::SseEvent& ev) {
    json::object data = json::parse(ev.data).as_object();
    EXPECT_EQ(data.at("type").as_string(), ev.event) << ev.data;
    out.emplace_back(ev.event, std::move(data));
  });
  EXPECT_EQ(parser.buffered(), 0u);
  return out;
}

std::vector<std::string> Names(const std::vector<std::pair<std::string, json::object>>& events) {
  std::vector<std::string> names;
  for (const auto& [name, _] : events) names.push_back(name);
  return names;
}

// An upstream chat.completion.chunk with the given delta (and finish_reason).
std::string Chunk(const std::string& delta, const std::string& finish = "null",
                  const std::string& extra_choice = "") {
  return R"({"id":"chatcmpl-abc","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":)" +
         delta + R"(,"finish_reason":)" + finish + extra_choice + "}]}";
}
std::string UsageChunk(int prompt, int cached, int completion) {
  return R"({"id":"chatcmpl-abc","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":)" +
         std::to_string(prompt) + R"(,"completion_tokens":)" + std::to_string(completion) +
         R"(,"prompt_tokens_details":{"cached_tokens":)" + std::to_string(cached) + "}}}";
}

// Feeds each upstream data payload, collecting everything emitted.
std::string Feed(StreamTranslator& t, const std::vector<std::string>& data) {
  std::string out;
  for (const auto& d : data) out += t.OnData(d);
  return out;
}

TEST(AnthropicStream, TextStreamHasTheExactEventSequence) {
  StreamTranslator t(Ctx());
  // A role chunk without usage is held (message_start waits for usage or content); the
  // first content then yields message_start and its block at once.
  EXPECT_EQ(t.OnData(Chunk(R"({"role":"assistant","content":""})")), "");
  auto first = Parse(t.OnData(Chunk(R"({"content":" Hello"})")));
  EXPECT_EQ(Names(first), (std::vector<std::string>{"message_start", "content_block_start", "ping",
                                                    "content_block_delta"}));
  const json::object& msg = first[0].second.at("message").as_object();
  EXPECT_EQ(msg.at("id"), "msg_abc");
  EXPECT_EQ(msg.at("model"), "claude-local");
  EXPECT_EQ(msg.at("role"), "assistant");
  EXPECT_TRUE(msg.at("content").as_array().empty());
  EXPECT_TRUE(msg.at("stop_reason").is_null());
  EXPECT_EQ(msg.at("usage").at("input_tokens"), 0);  // no usage upstream yet
  EXPECT_EQ(first[1].second.at("content_block"), json::parse(R"({"type":"text","text":""})"));
  EXPECT_EQ(first[3].second.at("delta"), json::parse(R"({"type":"text_delta","text":" Hello"})"));

  auto rest =
      Parse(Feed(t, {Chunk(R"({"content":" world"})", "\"length\""), UsageChunk(12, 0, 2)}));
  EXPECT_EQ(Names(rest), std::vector<std::string>{"content_block_delta"})
      << "the usage chunk alone emits nothing; the message ends at [DONE]";
  auto end = Parse(t.OnData("[DONE]"));
  EXPECT_EQ(Names(end),
            (std::vector<std::string>{"content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(end[1].second.at("delta"),
            json::parse(R"({"stop_reason":"max_tokens","stop_sequence":null})"));
  EXPECT_EQ(end[1].second.at("usage").at("output_tokens"), 2);
  EXPECT_EQ(end[1].second.at("usage").at("input_tokens"), 12);
  EXPECT_TRUE(t.done());
  EXPECT_FALSE(t.failed());
  EXPECT_EQ(t.OnEnd(), "") << "nothing after message_stop";
}

// A vLLM pool asked for continuous_usage_stats puts the usage on every chunk, its role
// chunk first: message_start reports the prompt's tokens, and message_delta's cumulative
// usage agrees with it (input + cache reads = message_start's input).
TEST(AnthropicStream, MessageStartCarriesThePromptTokensFromTheFirstUsageChunk) {
  StreamTranslator t(Ctx());
  auto with_usage = [](std::string chunk, int prompt, int completion) {
    chunk.pop_back();  // the closing brace
    return chunk + R"(,"usage":{"prompt_tokens":)" + std::to_string(prompt) +
           R"(,"total_tokens":)" + std::to_string(prompt + completion) +
           R"(,"completion_tokens":)" + std::to_string(completion) + "}}";
  };
  auto start = Parse(t.OnData(with_usage(Chunk(R"({"role":"assistant","content":""})"), 37, 0)));
  ASSERT_EQ(Names(start), std::vector<std::string>{"message_start"});
  const json::object& usage = start[0].second.at("message").at("usage").as_object();
  EXPECT_EQ(usage.at("input_tokens"), 37);
  EXPECT_EQ(usage.at("output_tokens"), 0);
  auto ev = Parse(Feed(t, {with_usage(Chunk(R"({"content":"Hi"})"), 37, 1),
                           with_usage(Chunk(R"({"content":"!"})", "\"stop\""), 37, 2),
                           UsageChunk(37, 32, 2), "[DONE]"}));
  const json::object& delta = ev[ev.size() - 2].second.at("usage").as_object();
  EXPECT_EQ(delta.at("input_tokens"), 5);
  EXPECT_EQ(delta.at("cache_read_input_tokens"), 32);
  EXPECT_EQ(delta.at("output_tokens"), 2);
  EXPECT_EQ(delta.at("input_tokens").as_int64() + delta.at("cache_read_input_tokens").as_int64(),
            usage.at("input_tokens").as_int64());
}

TEST(AnthropicStream, TextWithEmptyToolCallsListIsJustText) {
  StreamTranslator t(Ctx());
  auto ev = Parse(Feed(t, {Chunk(R"({"role":"assistant","content":"Hi","tool_calls":[]})"),
                           Chunk(R"({"content":"!","tool_calls":[]})", "\"stop\""), "[DONE]"}));
  EXPECT_EQ(Names(ev),
            (std::vector<std::string>{"message_start", "content_block_start", "ping",
                                      "content_block_delta", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(ev[6].second.at("delta").at("stop_reason"), "end_turn");
}

TEST(AnthropicStream, ToolArgumentsSplitAcrossChunks) {
  StreamTranslator t(Ctx());
  auto ev = Parse(Feed(
      t,
      {Chunk(R"({"role":"assistant","content":"Let me check."})"),
       Chunk(
           R"({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]})"),
       Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]})"),
       Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Pa"}}]})"),
       Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"ris\"}"}}]})"),
       Chunk(
           R"({"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]})"),
       Chunk(R"({})", "\"tool_calls\""), UsageChunk(50, 0, 20), "[DONE]"}));
  EXPECT_EQ(Names(ev), (std::vector<std::string>{
                           "message_start", "content_block_start", "ping", "content_block_delta",
                           "content_block_stop", "content_block_start", "content_block_delta",
                           "content_block_delta", "content_block_delta", "content_block_stop",
                           "content_block_start", "content_block_delta", "content_block_stop",
                           "message_delta", "message_stop"}));
  EXPECT_EQ(ev[5].second.at("index"), 1);
  EXPECT_EQ(ev[5].second.at("content_block"),
            json::parse(R"({"type":"tool_use","id":"call_1","name":"get_weather","input":{}})"));
  std::string args;
  for (int i : {6, 7, 8}) {
    EXPECT_EQ(ev[i].second.at("index"), 1);
    EXPECT_EQ(ev[i].second.at("delta").at("type"), "input_json_delta");
    args += ev[i].second.at("delta").at("partial_json").as_string();
  }
  EXPECT_EQ(json::parse(args), json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(ev[10].second.at("index"), 2);
  EXPECT_EQ(ev[10].second.at("content_block").at("name"), "get_time");
  EXPECT_EQ(ev[13].second.at("delta").at("stop_reason"), "tool_use");
}

TEST(AnthropicStream, CachedTokensAreCountedOnce) {
  StreamTranslator t(Ctx());
  auto ev =
      Parse(Feed(t, {Chunk(R"({"content":"x"})", "\"stop\""), UsageChunk(100, 60, 5), "[DONE]"}));
  const json::object& usage = ev[ev.size() - 2].second.at("usage").as_object();
  EXPECT_EQ(usage.at("input_tokens"), 40);
  EXPECT_EQ(usage.at("cache_read_input_tokens"), 60);
  EXPECT_EQ(usage.at("cache_creation_input_tokens"), 0);
  EXPECT_EQ(usage.at("output_tokens"), 5);
}

TEST(AnthropicStream, StopSequenceAndContentFilter) {
  StreamTranslator stop(Ctx());
  auto ev = Parse(
      Feed(stop, {Chunk(R"({"content":"a"})", "\"stop\"", R"(,"stop_reason":"END")"), "[DONE]"}));
  EXPECT_EQ(ev[ev.size() - 2].second.at("delta"),
            json::parse(R"({"stop_reason":"stop_sequence","stop_sequence":"END"})"));

  StreamTranslator filtered(Ctx());
  ev = Parse(Feed(filtered, {Chunk(R"({"content":"a"})", "\"content_filter\""), "[DONE]"}));
  EXPECT_EQ(ev[ev.size() - 2].second.at("delta").at("stop_reason"), "refusal");

  StreamTranslator token_stop(Ctx());  // vLLM: stop_reason is a token id for stop_token_ids
  ev = Parse(
      Feed(token_stop, {Chunk(R"({"content":"a"})", "\"stop\"", R"(,"stop_reason":2)"), "[DONE]"}));
  EXPECT_EQ(ev[ev.size() - 2].second.at("delta").at("stop_reason"), "end_turn");
}

TEST(AnthropicStream, CutMidwayBecomesAnErrorEvent) {
  StreamTranslator t(Ctx());
  Feed(t, {Chunk(R"({"role":"assistant","content":""})"), Chunk(R"({"content":"partial"})")});
  auto ev = Parse(t.OnError(Status(ErrorCode::kUnavailable, "upstream p/0: connection reset")));
  ASSERT_EQ(Names(ev), std::vector<std::string>{"error"});
  EXPECT_EQ(ev[0].second.at("error"),
            json::parse(R"({"type":"api_error","message":"upstream p/0: connection reset"})"));
  EXPECT_TRUE(t.failed());
  EXPECT_EQ(t.OnEnd(), "");

  StreamTranslator clean_eof(Ctx());  // upstream ended cleanly but never finished
  Feed(clean_eof, {Chunk(R"({"content":"partial"})")});
  ev = Parse(clean_eof.OnEnd());
  ASSERT_EQ(Names(ev), std::vector<std::string>{"error"});
  EXPECT_EQ(ev[0].second.at("error").at("type"), "api_error");

  StreamTranslator no_done(Ctx());  // finished, usage sent, but no [DONE]: still a message
  Feed(no_done, {Chunk(R"({"content":"a"})", "\"stop\""), UsageChunk(3, 0, 1)});
  EXPECT_EQ(Names(Parse(no_done.OnEnd())),
            (std::vector<std::string>{"content_block_stop", "message_delta", "message_stop"}));

  StreamTranslator upstream_error(Ctx());  // vLLM reports errors inside the stream
  ev = Parse(Feed(upstream_error,
                  {Chunk(R"({"content":"a"})"), R"({"error":{"message":"boom","code":500}})"}));
  EXPECT_EQ(ev.back().first, "error");
  // The gateway's words, not the upstream's (fuzz/anthropic_response_fuzz.cc's seeds carry
  // an upstream message with an address).
  EXPECT_EQ(ev.back().second.at("error").at("message"),
            "The model server failed during the stream.");
  EXPECT_EQ(ev.back().second.at("error").at("type"), "api_error");
}

TEST(AnthropicResponse, TextAndUsage) {
  auto r = TranslateResponse(200, R"({"id":"chatcmpl-xyz","object":"chat.completion","model":"m",
      "choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"length"}],
      "usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}})",
                             Ctx());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"id":"msg_xyz","type":"message","role":"assistant",
      "model":"claude-local","content":[{"type":"text","text":"Hello!"}],
      "stop_reason":"max_tokens","stop_sequence":null,
      "usage":{"input_tokens":36,"cache_creation_input_tokens":0,"cache_read_input_tokens":64,
               "output_tokens":7}})"));
}

TEST(AnthropicResponse, ToolCallsBecomeToolUseBlocks) {
  auto r = TranslateResponse(200, R"({"id":"chatcmpl-1","choices":[{"index":0,"message":{
      "role":"assistant","content":null,"tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},
        {"id":"call_2","type":"function","function":{"name":"g","arguments":"not json"}}]},
      "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":9}})",
                             Ctx());
  auto m = json::parse(r.body);
  EXPECT_EQ(m.at("content"), json::parse(R"([
      {"type":"tool_use","id":"call_1","name":"f","input":{"a":1}},
      {"type":"tool_use","id":"call_2","name":"g","input":{}}])"));
  EXPECT_EQ(m.at("stop_reason"), "tool_use");
  EXPECT_EQ(m.at("usage").at("input_tokens"), 5);
}

TEST(AnthropicResponse, StopSequenceFromVllmStopReason) {
  auto r = TranslateResponse(200, R"({"id":"chatcmpl-1","choices":[{"index":0,
      "message":{"role":"assistant","content":"x"},"finish_reason":"stop","stop_reason":"END"}]})",
                             Ctx());
  auto m = json::parse(r.body);
  EXPECT_EQ(m.at("stop_reason"), "stop_sequence");
  EXPECT_EQ(m.at("stop_sequence"), "END");
}

TEST(AnthropicResponse, UpstreamErrorsInAnthropicShape) {
  auto bad = TranslateResponse(
      400, R"({"error":{"message":"max_tokens too large","type":"BadRequestError","code":400}})",
      Ctx());
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body), json::parse(R"({"type":"error","error":{
      "type":"invalid_request_error","message":"max_tokens too large"}})"));
  auto busy = TranslateResponse(503, "Service Unavailable", Ctx());
  EXPECT_EQ(busy.status, 529);
  EXPECT_EQ(json::parse(busy.body).at("error").at("type"), "overloaded_error");
  auto garbage = TranslateResponse(200, "{\"choices\":[]}", Ctx());
  EXPECT_EQ(garbage.status, 502);
  EXPECT_EQ(json::parse(garbage.body).at("error").at("type"), "api_error");
}

// An upstream error body that is not JSON (a proxy's page, bytes that are not UTF-8) is
// not quoted: the client gets valid JSON in Anthropic's shape with the gateway's words
// (found by fuzz/anthropic_response_fuzz.cc: the raw bytes made the body invalid JSON).
TEST(AnthropicResponse, UpstreamErrorBodyThatIsNotJsonIsNotQuoted) {
  auto r = TranslateResponse(400, "\xec\xec<html>proxy at 10.0.0.7</html>", Ctx());
  EXPECT_EQ(r.status, 400);
  boost::system::error_code ec;
  auto v = json::parse(r.body, ec);
  ASSERT_FALSE(ec) << r.body;
  EXPECT_EQ(v.at("error").at("type"), "invalid_request_error");
  EXPECT_EQ(v.at("error").at("message"), "upstream answered HTTP 400 without an error message");
  EXPECT_EQ(r.body.find("10.0.0.7"), std::string::npos);
}

}  // namespace
}  // namespace kinference::api::anthropic
