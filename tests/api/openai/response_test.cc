// Upstream responses as the gateway reads them: chunk contents, usage, reply text.
#include "api/openai/response.h"

#include <gtest/gtest.h>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <string>
#include <vector>

namespace kinference::api {
namespace {

TEST(InspectChunk, ClassifiesChunks) {
  auto role =
      InspectChunk(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})");
  EXPECT_TRUE(role.parsed);
  EXPECT_FALSE(role.has_content);
  EXPECT_TRUE(InspectChunk(R"({"choices":[{"index":0,"delta":{"content":" hi"}}]})").has_content);
  EXPECT_TRUE(InspectChunk(R"({"choices":[{"index":0,"text":" hi"}]})").has_content);
  EXPECT_FALSE(
      InspectChunk(R"({"choices":[{"index":0,"text":"","finish_reason":"stop"}]})").has_content);
  auto usage = InspectChunk(R"({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,)"
                            R"("prompt_tokens_details":{"cached_tokens":4}}})");
  EXPECT_TRUE(usage.usage_only);
  ASSERT_TRUE(usage.usage.has_value());
  EXPECT_EQ(usage.usage->prompt_tokens, 10);
  EXPECT_EQ(usage.usage->cached_tokens, 4);
  EXPECT_EQ(usage.usage->completion_tokens, 3);
  EXPECT_FALSE(
      InspectChunk(R"({"choices":[{"delta":{"content":"x"}}],"usage":null})").usage.has_value());
  EXPECT_TRUE(InspectChunk("[DONE]").done);
  EXPECT_FALSE(InspectChunk("garbage").parsed);
}

// Usage that cannot be right (engine-sim --fault wrong-usage sends all of these) is not
// taken: a count beyond int32, a negative count, more cached than prompt tokens. The
// chunk is still the usage-only chunk (so a client that did not ask for usage does not
// get it).
TEST(InspectChunk, ImpossibleUsageIsNotTaken) {
  for (
      const char* usage :
      {R"({"prompt_tokens":1099511627776,"completion_tokens":3})",
       R"({"prompt_tokens":10,"completion_tokens":-7})",
       R"({"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":11}})",
       R"({"prompt_tokens":"10","completion_tokens":3})", R"({"prompt_tokens":1.5})"}) {
    auto info = InspectChunk(std::string(R"({"choices":[],"usage":)") + usage + "}");
    EXPECT_FALSE(info.usage.has_value()) << usage;
    EXPECT_TRUE(info.usage_only) << usage;
  }
  auto ok = InspectChunk(R"({"choices":[],"usage":{"prompt_tokens":2147483647,)"
                         R"("completion_tokens":0,"prompt_tokens_details":null}})");
  ASSERT_TRUE(ok.usage.has_value());
  EXPECT_EQ(ok.usage->prompt_tokens, 2147483647);
}

TEST(InspectChunk, ReplyTextOfChoiceZero) {
  EXPECT_EQ(InspectChunk(R"({"choices":[{"index":0,"delta":{"content":" hi"}}]})").content, " hi");
  EXPECT_EQ(InspectChunk(R"({"choices":[{"index":1,"delta":{"content":"other"}}]})").content, "");
  EXPECT_EQ(InspectChunk(R"({"choices":[{"index":0,"delta":{"reasoning_content":"r"}}]})").content,
            "");
}

void ExpectSameInfo(const ChunkInfo& a, const ChunkInfo& b) {
  EXPECT_EQ(a.done, b.done);
  EXPECT_EQ(a.parsed, b.parsed);
  EXPECT_EQ(a.has_content, b.has_content);
  EXPECT_EQ(a.usage_only, b.usage_only);
  EXPECT_EQ(a.usage.has_value(), b.usage.has_value());
  EXPECT_EQ(a.content, b.content);
}

// Chunks as vLLM and OpenAI send them and odd ones: ScanStreamChunk answers exactly what
// InspectChunk does, or hands the chunk back (nullopt) for InspectChunk to answer.
TEST(ScanStreamChunk, AgreesWithInspectChunkOrHandsBack) {
  const std::string long_text(5000, 'x');
  const std::vector<std::string> chunks = {
      R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})",
      R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}]})",
      R"({"choices":[{"index":0,"delta":{"content":"a \"q\" \u00e9\n\ud83d\ude00"}}]})",
      R"({"choices":[{"delta":{"content":"no index"}}]})",
      R"({"choices":[{"delta":{"content":"index after"},"index":0}]})",
      R"({"choices":[{"delta":{"content":"index one"},"index":1}]})",
      R"({"choices":[{"delta":{"content":"index double"},"index":1.5}]})",
      R"({"choices":[{"delta":{"content":"index 2^32"},"index":4294967296}]})",
      R"({"choices":[{"delta":{"content":"index huge"},"index":18446744073709551615}]})",
      R"({"choices":[{"delta":{"content":"index null"},"index":null}]})",
      R"({"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a"}}]})",
      R"({"choices":[{"index":0,"delta":{"content":"first"}},{"index":0,"delta":{"content":"second"}}]})",
      R"({"choices":[{"index":0,"delta":{"content":"kept"}},{"index":0,"delta":{"content":""}}]})",
      R"({"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]})",
      R"({"choices":[{"index":0,"delta":{"reasoning_content":""}}]})",
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"a\":[1,{\"b\":2}]}"}}]}}]})",
      R"({"choices":[{"index":0,"delta":{"tool_calls":[]}}]})",
      R"({"choices":[{"index":0,"delta":{"tool_calls":{"not":"an array"}}}]})",
      R"({"choices":[{"index":0,"text":" hi","logprobs":{"tokens":[" hi"],"token_logprobs":[-0.5],"top_logprobs":[{" hi":-0.5}],"text_offset":[0]},"finish_reason":null}]})",
      R"({"choices":[{"index":0,"text":"","finish_reason":"stop"}]})",
      R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":null}]})",
      R"({"choices":[{"index":0,"delta":"not an object"}]})",
      R"({"choices":[{"index":0,"delta":{"content":7}}]})",
      R"({"choices":[1,"two",[3],null,{"index":0,"delta":{"content":"after junk"}}]})",
      R"({"choices":{"index":0,"delta":{"content":"not an array"}}})",
      R"({"choices":[{"index":0,"delta":{"content":"x"}}],"usage":null})",
      R"({"choices":[{"index":0,"delta":{"content":"x"}}],"usage":[1]})",
      R"({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}})",
      R"({"choices":[{"index":0,"delta":{"content":"x"}}],"choices":[]})",
      R"({"choices":[{"index":0,"delta":{"content":"x","content":"y"}}]})",
      R"({"choices":[{"index":0,"index":1,"delta":{"content":"x"}}]})",
      R"({"error":{"message":"boom","type":"internal_error","code":500}})",
      R"({"object":"error","message":"boom","code":500})",
      R"({"nested":{"choices":[{"delta":{"content":"deep"}}]},"choices":[{"x":{"delta":{"content":"deeper"}}}]})",
      R"({"ch\u006fices":[{"index":0,"delta":{"content":"escaped key"}}]})",
      R"({")" + long_text + R"(":1,"choices":[{"index":0,"delta":{"content":")" + long_text +
          R"("}}]})",
      R"({"choices":[{"index":0,"delta":{"content":"x"}}]} trailing)",
      R"({"choices":[{"index":0,"delta":{"content":"x"}})",
      R"([{"choices":[]}])",
      R"("text")",
      "42",
      "null",
      "",
      "garbage",
      "[DONE]",
      "{}"};
  int scanned = 0;
  for (const std::string& data : chunks) {
    SCOPED_TRACE(data.substr(0, 120));
    const ChunkInfo inspected = InspectChunk(data);
    if (auto info = ScanStreamChunk(data)) {
      ++scanned;
      ExpectSameInfo(*info, inspected);
    }
  }
  EXPECT_GE(scanned, 30);
}

// The chunks that carry what the gateway counts or cannot read without the parsed value.
TEST(ScanStreamChunk, HandsBackUsageRepeatedKeysAndNonObjects) {
  EXPECT_FALSE(ScanStreamChunk(R"({"choices":[],"usage":{"prompt_tokens":1}})"));
  EXPECT_FALSE(ScanStreamChunk(R"({"choices":[{"delta":{"content":"x","content":"y"}}]})"));
  EXPECT_FALSE(ScanStreamChunk("garbage"));
  EXPECT_FALSE(ScanStreamChunk("[1]"));
  auto token = ScanStreamChunk(R"({"choices":[{"index":0,"delta":{"content":"Hel"}}]})");
  ASSERT_TRUE(token);
  EXPECT_TRUE(token->has_content);
  EXPECT_EQ(token->content, "Hel");
  EXPECT_TRUE(ScanStreamChunk("[DONE]")->done);
}

TEST(ReplyContent, WholeResponse) {
  auto v = boost::json::parse(
      R"({"choices":[{"index":0,"message":{"role":"assistant","content":"Hello."}}]})");
  EXPECT_EQ(ReplyContent(v.as_object()), "Hello.");
  auto tools = boost::json::parse(
      R"({"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[]}}]})");
  EXPECT_EQ(ReplyContent(tools.as_object()), "");
  EXPECT_EQ(ReplyContent(boost::json::object{}), "");
}

// The contract Router::OnCompletionText relies on: what a turn leaves cached is exactly
// the start of the next turn's rendering.

}  // namespace
}  // namespace kinference::api
