// Upstream responses as the gateway reads them: chunk contents, usage, reply text.
#include "api/openai/response.h"

#include <gtest/gtest.h>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

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
