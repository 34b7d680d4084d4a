// StreamAssembler: streamed OpenAI chunks rebuilt into the non-streamed response, and
// which requests may be streamed upstream at all (StreamsFaithfully).
#include "api/openai/stream_assembler.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace kinference::api {
namespace {

namespace json = boost::json;

json::value Assemble(ApiKind kind, const std::vector<std::string>& events) {
  StreamAssembler a(kind);
  for (const auto& e : events) a.Add(e);
  auto body = a.Finish();
  EXPECT_TRUE(body.ok()) << body.status().message();
  return body.ok() ? json::parse(*body) : json::value();
}

std::string ChatChunk(const std::string& choices, const std::string& extra = "") {
  return R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,)"
         R"("model":"served",)" +
         extra + R"("choices":)" + choices + "}";
}

const char* kUsageChunk =
    R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,)"
    R"("model":"served","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,)"
    R"("total_tokens":14,"prompt_tokens_details":{"cached_tokens":6}}})";

TEST(StreamAssemblerTest, ChatContentUsageAndMetadata) {
  json::value got = Assemble(
      ApiKind::kChatCompletions,
      {ChatChunk(R"([{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
                 R"("finish_reason":null}])",
                 R"("system_fingerprint":"fp-1",)"),
       ChatChunk(R"([{"index":0,"delta":{"content":"Hel"},"finish_reason":null}])"),
       ChatChunk(R"([{"index":0,"delta":{"content":"lo"},"finish_reason":null}])"),
       ChatChunk(R"([{"index":0,"delta":{},"finish_reason":"stop","stop_reason":null}])"),
       kUsageChunk, "[DONE]"});
  json::value want = json::parse(R"({
    "id":"chatcmpl-7","object":"chat.completion","created":1700000000,"model":"served",
    "system_fingerprint":"fp-1",
    "choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},
                "logprobs":null,"finish_reason":"stop","stop_reason":null}],
    "usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,
             "prompt_tokens_details":{"cached_tokens":6}}})");
  EXPECT_EQ(got, want) << json::serialize(got);
}

// Chunks parsed once into a short-lived arena (as the gateway parses each event into a
// stack buffer): the assembler keeps copies, so wiping the arena after each chunk changes
// nothing in the result.
TEST(StreamAssemblerTest, ChunksParsedIntoATransientArenaAssembleTheSame) {
  const std::vector<std::string> events = {
      ChatChunk(R"([{"index":0,"delta":{"role":"assistant","content":""},"logprobs":)"
                R"({"content":[{"token":"Hel","logprob":-0.5}]},"finish_reason":null}])",
                R"("system_fingerprint":"fp-1",)"),
      ChatChunk(R"([{"index":0,"delta":{"content":"Hello there, a longer piece"},)"
                R"("finish_reason":null}])"),
      ChatChunk(R"([{"index":0,"delta":{},"finish_reason":"stop","stop_reason":"x"}])"),
      kUsageChunk, "[DONE]"};
  StreamAssembler a(ApiKind::kChatCompletions);
  alignas(std::max_align_t) unsigned char buffer[4096];
  for (const auto& e : events) {
    {
      json::monotonic_resource arena(buffer, sizeof buffer);
      StreamChunk chunk = ParseStreamChunk(e, &arena);
      EXPECT_EQ(chunk.done, e == "[DONE]");
      a.Add(chunk);
    }
    std::memset(buffer, 0xa5, sizeof buffer);
  }
  auto body = a.Finish();
  ASSERT_TRUE(body.ok()) << body.status().message();
  EXPECT_EQ(json::parse(*body), Assemble(ApiKind::kChatCompletions, events)) << *body;
  EXPECT_NE(body->find("Hello there, a longer piece"), std::string::npos) << *body;
  StreamChunk garbage = ParseStreamChunk("{not json");
  EXPECT_FALSE(garbage.done);
  EXPECT_TRUE(garbage.value.is_null());
}

TEST(StreamAssemblerTest, ChatToolCallsAccumulatePerIndexAndContentIsNull) {
  json::value got =
      Assemble(ApiKind::kChatCompletions,
               {ChatChunk(R"([{"index":0,"delta":{"role":"assistant","content":""}}])"),
                ChatChunk(R"([{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a",)"
                          R"("type":"function","function":{"name":"weather","arguments":""}}]}}])"),
                ChatChunk(R"([{"index":0,"delta":{"tool_calls":[{"index":0,)"
                          R"("function":{"arguments":"{\"city\":"}}]}}])"),
                ChatChunk(R"([{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b",)"
                          R"("type":"function","function":{"name":"time","arguments":"{}"}}]}}])"),
                ChatChunk(R"([{"index":0,"delta":{"tool_calls":[{"index":0,)"
                          R"("function":{"arguments":"\"Paris\"}"}}]}}])"),
                ChatChunk(R"([{"index":0,"delta":{},"finish_reason":"tool_calls"}])"), "[DONE]"});
  const json::value& message = got.at("choices").at(0).at("message");
  EXPECT_TRUE(message.at("content").is_null());
  json::value want = json::parse(R"([
    {"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
    {"id":"call_b","type":"function","function":{"name":"time","arguments":"{}"}}])");
  EXPECT_EQ(message.at("tool_calls"), want) << json::serialize(got);
  EXPECT_EQ(got.at("choices").at(0).at("finish_reason"), "tool_calls");
  EXPECT_FALSE(got.as_object().contains("usage"));
}

TEST(StreamAssemblerTest, ChatChoicesOrderedByIndexWithLogprobsReasoningRefusal) {
  json::value got = Assemble(
      ApiKind::kChatCompletions,
      {ChatChunk(R"([{"index":1,"delta":{"role":"assistant","reasoning_content":"think"},)"
                 R"("logprobs":{"content":[{"token":"B","logprob":-1.0,"top_logprobs":[]}]}}])"),
       ChatChunk(R"([{"index":0,"delta":{"role":"assistant","refusal":"No"}}])"),
       ChatChunk(R"([{"index":1,"delta":{"content":"B"},)"
                 R"("logprobs":{"content":[{"token":"C","logprob":-2.0,"top_logprobs":[]}]}}])"),
       ChatChunk(R"([{"index":1,"delta":{},"finish_reason":"length"},)"
                 R"({"index":0,"delta":{},"finish_reason":"stop","stop_reason":42}])"),
       "[DONE]"});
  const json::array& choices = got.at("choices").as_array();
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].at("index"), 0);
  EXPECT_TRUE(choices[0].at("message").at("content").is_null());
  EXPECT_EQ(choices[0].at("message").at("refusal"), "No");
  EXPECT_TRUE(choices[0].at("logprobs").is_null());
  EXPECT_EQ(choices[0].at("stop_reason"), 42);
  EXPECT_EQ(choices[1].at("message").at("content"), "B");
  EXPECT_EQ(choices[1].at("message").at("reasoning_content"), "think");
  EXPECT_EQ(choices[1].at("logprobs").at("content").as_array().size(), 2u);
  EXPECT_EQ(choices[1].at("logprobs").at("content").at(1).at("token"), "C");
  EXPECT_EQ(choices[1].at("finish_reason"), "length");
  EXPECT_FALSE(choices[1].as_object().contains("stop_reason"));
}

TEST(StreamAssemblerTest, CompletionsTextAndLogprobsConcatenated) {
  auto chunk = [](const std::string& choice) {
    return R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[)" +
           choice + "]}";
  };
  json::value got = Assemble(
      ApiKind::kCompletions,
      {chunk(R"({"index":0,"text":"Hel","logprobs":{"tokens":["Hel"],"token_logprobs":[-0.5],)"
             R"("top_logprobs":[{"Hel":-0.5}],"text_offset":[0]},"finish_reason":null})"),
       chunk(R"({"index":0,"text":"lo","logprobs":{"tokens":["lo"],"token_logprobs":[-0.25],)"
             R"("top_logprobs":[{"lo":-0.25}],"text_offset":[3]},"finish_reason":"length",)"
             R"("stop_reason":null})"),
       R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[],)"
       R"("usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})",
       "[DONE]"});
  json::value want = json::parse(R"({
    "id":"cmpl-1","object":"text_completion","created":5,"model":"m",
    "choices":[{"index":0,"text":"Hello",
                "logprobs":{"tokens":["Hel","lo"],"token_logprobs":[-0.5,-0.25],
                            "top_logprobs":[{"Hel":-0.5},{"lo":-0.25}],"text_offset":[0,3]},
                "finish_reason":"length","stop_reason":null}],
    "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})");
  EXPECT_EQ(got, want) << json::serialize(got);
}

// A provider that omits [DONE] but sends usage (include_usage is forced) is complete.
TEST(StreamAssemblerTest, FinishedWithUsageWithoutDoneIsComplete) {
  StreamAssembler a(ApiKind::kChatCompletions);
  a.Add(ChatChunk(R"([{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}])"));
  a.Add(kUsageChunk);
  auto r = a.Finish();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(json::parse(*r).at("usage").at("total_tokens"), 14);
}

// Complete only if a choice arrived and every choice finished; without [DONE], usage too.
// Each of these used to become a 200.
TEST(StreamAssemblerTest, IncompleteStreamsFailEvenWithDone) {
  auto fails = [](ApiKind kind, const std::vector<std::string>& events, const char* what) {
    StreamAssembler a(kind);
    for (const auto& e : events) a.Add(e);
    auto r = a.Finish();
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable) << what;
    EXPECT_FALSE(a.failed()) << what;  // not an error event: an incomplete stream
  };
  const auto chat = ApiKind::kChatCompletions;
  fails(chat,
        {ChatChunk(R"([{"index":0,"delta":{"role":"assistant","content":"Hel"},)"
                   R"("finish_reason":null}])"),
         "[DONE]"},
        "one unfinished content chunk, then [DONE]");
  fails(chat,
        {ChatChunk(R"([{"index":0,"delta":{"content":"Hel"},"finish_reason":null}])"), kUsageChunk,
         "[DONE]"},
        "unfinished, with usage and [DONE]");
  fails(chat, {"[DONE]"}, "only [DONE]");
  fails(chat, {kUsageChunk, "[DONE]"}, "usage and [DONE], no choice");
  fails(chat, {ChatChunk(R"([{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}])")},
        "finished, then a clean end without usage or [DONE]");
  fails(chat,
        {ChatChunk(R"([{"index":0,"delta":{},"finish_reason":"stop"},)"
                   R"({"index":1,"delta":{"content":"y"},"finish_reason":null}])"),
         kUsageChunk, "[DONE]"},
        "n=2, choice 1 unfinished, [DONE]");
  fails(ApiKind::kCompletions,
        {R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m",)"
         R"("choices":[{"index":0,"text":"Hel","logprobs":null,"finish_reason":null}]})",
         "[DONE]"},
        "completions: unfinished, then [DONE]");
}

TEST(StreamAssemblerTest, ErrorsAndCutStreamsFail) {
  {
    StreamAssembler a(ApiKind::kChatCompletions);
    a.Add(ChatChunk(R"([{"index":0,"delta":{"content":"x"}}])"));
    a.Add(R"({"error":{"message":"engine died","type":"internal_error","code":500}})");
    a.Add("[DONE]");
    EXPECT_TRUE(a.failed());
    auto r = a.Finish();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
    // The gateway's words for the client; the upstream's only for the log.
    EXPECT_EQ(r.status().message(), "upstream stream reported an error");
    EXPECT_EQ(a.upstream_error(), "engine died");
  }
  {
    StreamAssembler a(ApiKind::kCompletions);  // vLLM's ErrorResponse shape
    a.Add(R"({"object":"error","message":"oom","type":"InternalServerError","code":500})");
    EXPECT_FALSE(a.Finish().ok());
  }
  {
    StreamAssembler a(ApiKind::kChatCompletions);
    a.Add("not json");
    EXPECT_FALSE(a.Finish().ok());
  }
  {
    StreamAssembler a(ApiKind::kChatCompletions);  // cut: no finish, no [DONE]
    a.Add(ChatChunk(R"([{"index":0,"delta":{"content":"x"},"finish_reason":null}])"));
    EXPECT_FALSE(a.Finish().ok());
  }
  {
    StreamAssembler a(ApiKind::kChatCompletions);  // n=2, one choice unfinished
    a.Add(ChatChunk(R"([{"index":0,"delta":{},"finish_reason":"stop"},)"
                    R"({"index":1,"delta":{"content":"y"}}])"));
    EXPECT_FALSE(a.Finish().ok());
  }
  EXPECT_FALSE(StreamAssembler(ApiKind::kChatCompletions).Finish().ok());  // nothing at all
}

TEST(StreamAssemblerTest, StreamsFaithfully) {
  auto ok = [](ApiKind kind, const char* body) {
    return StreamsFaithfully(kind, json::parse(body).as_object());
  };
  const auto chat = ApiKind::kChatCompletions;
  const auto cmpl = ApiKind::kCompletions;
  EXPECT_TRUE(ok(chat, R"({"model":"m","messages":[],"n":2,"logprobs":true,"tools":[]})"));
  EXPECT_TRUE(ok(chat, R"({"model":"m","messages":[],"prompt_logprobs":null})"));
  EXPECT_FALSE(ok(chat, R"({"model":"m","messages":[],"prompt_logprobs":1})"));
  EXPECT_FALSE(ok(chat, R"({"model":"m","messages":[],"stream_options":{}})"));
  EXPECT_FALSE(ok(chat, R"({"model":"m","messages":[],"kv_transfer_params":{}})"));
  EXPECT_FALSE(ok(chat, R"({"model":"m","messages":[],"return_token_ids":true})"));
  EXPECT_FALSE(ok(chat, R"({"model":"m","messages":[],"use_beam_search":true})"));
  EXPECT_TRUE(ok(cmpl, R"({"model":"m","prompt":"x","logprobs":2,"echo":false,"best_of":1})"));
  EXPECT_FALSE(ok(cmpl, R"({"model":"m","prompt":"x","echo":true})"));
  EXPECT_FALSE(ok(cmpl, R"({"model":"m","prompt":"x","best_of":3})"));
  EXPECT_FALSE(ok(cmpl, R"({"model":"m","prompt":"x","prompt_logprobs":0})"));
}

TEST(StreamAssemblerTest, StreamedUpstreamBody) {
  ParsedRequest r;
  r.body = json::parse(R"({"model":"m","stream":false,"messages":[]})").as_object();
  json::value body = json::parse(StreamedUpstreamBody(r));
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_EQ(body.at("stream_options").at("include_usage"), true);
  EXPECT_EQ(body.at("model"), "m");
}

}  // namespace
}  // namespace kinference::api
