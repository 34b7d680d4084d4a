#include "api/openai/request.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <limits>

#include "routing/router.h"

namespace kinference::api {
namespace {

namespace json = boost::json;

std::string Chat(const std::string& messages, const std::string& extra = "") {
  return R"({"model":"m","messages":)" + messages + extra + "}";
}

TEST(RenderChat, RoleNewlineContentNewlinePerMessage) {
  auto r =
      ParseRequest(ApiKind::kChatCompletions, Chat(R"([{"role":"system","content":"be brief"},)"
                                                   R"({"role":"user","content":"hi"}])"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->prompt_text, "system\nbe brief\nuser\nhi\n");
  EXPECT_EQ(r->model, "m");
  EXPECT_FALSE(r->stream);
}

TEST(RenderChat, PrefixStableAcrossTurns) {
  std::string turn1 = R"([{"role":"system","content":"sys"},{"role":"user","content":"q1"}])";
  std::string turn2 = R"([{"role":"system","content":"sys"},{"role":"user","content":"q1"},)"
                      R"({"role":"assistant","content":"a1"},{"role":"user","content":"q2"}])";
  auto r1 = ParseRequest(ApiKind::kChatCompletions, Chat(turn1));
  auto r2 = ParseRequest(ApiKind::kChatCompletions, Chat(turn2));
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r2->prompt_text.substr(0, r1->prompt_text.size()), r1->prompt_text);
  EXPECT_GT(r2->prompt_text.size(), r1->prompt_text.size());
}

TEST(RenderChat, BlockHashesOfATurnPrefixTheNextTurns) {
  std::string history = R"({"role":"system","content":")" + std::string(300, 's') + R"("},)" +
                        R"({"role":"user","content":")" + std::string(200, 'u') + R"("})";
  auto r1 = ParseRequest(ApiKind::kChatCompletions, Chat("[" + history + "]"));
  auto r2 = ParseRequest(ApiKind::kChatCompletions,
                         Chat("[" + history + R"(,{"role":"assistant","content":")" +
                              std::string(300, 'a') + R"("},{"role":"user","content":"more"}])"));
  ASSERT_TRUE(r1.ok() && r2.ok());
  auto h1 = routing::ChainedBlockHashes(r1->prompt_text, 128);
  auto h2 = routing::ChainedBlockHashes(r2->prompt_text, 128);
  ASSERT_EQ(h1.size(), r1->prompt_text.size() / 128);
  ASSERT_GT(h2.size(), h1.size());
  EXPECT_TRUE(std::equal(h1.begin(), h1.end(), h2.begin()));
}

TEST(RenderChat, ContentPartsContributeTheirText) {
  auto text = RenderChatText(
      json::parse(R"([{"role":"user","content":[{"type":"text","text":"a"},)"
                  R"({"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]},)"
                  R"({"role":"assistant","content":null}])"));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "user\nab\nassistant\n\n");
}

TEST(ParseRequest, Completions) {
  auto r = ParseRequest(ApiKind::kCompletions,
                        R"({"model":"m","prompt":"once upon","max_tokens":7,"stream":true,)"
                        R"("stream_options":{"include_usage":true}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompt_text, "once upon");
  EXPECT_EQ(r->max_tokens, 7);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->client_wants_usage);
  auto list = ParseRequest(ApiKind::kCompletions, R"({"model":"m","prompt":["a b","c"]})");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->prompt_text, "a b");
}

TEST(ParseRequest, MaxCompletionTokensWins) {
  auto r = ParseRequest(ApiKind::kChatCompletions,
                        Chat("[]", R"(,"max_tokens":5,"max_completion_tokens":9)"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_tokens, 9);
}

TEST(ParseRequest, MaxTokensBeyondIntRangeSaturateInsteadOfWrapping) {
  // 2^32 + 1 once wrapped to 1: the limits estimated one output token for it.
  auto r = ParseRequest(ApiKind::kChatCompletions, Chat("[]", R"(,"max_tokens":4294967297)"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_tokens, std::numeric_limits<int>::max());
  r = ParseRequest(ApiKind::kCompletions,
                   R"({"model":"m","prompt":"x","max_completion_tokens":18446744073709551615})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_tokens, std::numeric_limits<int>::max());
  r = ParseRequest(ApiKind::kChatCompletions, Chat("[]", R"(,"max_tokens":700000000000000)"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_tokens, std::numeric_limits<int>::max());
}

TEST(ParseRequest, AcceptsDeeplyNestedToolSchemas) {
  // Boost.JSON's default depth limit is 32; tool schemas can nest deeper.
  std::string deep;
  for (int i = 0; i < 60; ++i) deep += R"({"a":)";
  deep += "1";
  for (int i = 0; i < 60; ++i) deep += "}";
  auto r = ParseRequest(
      ApiKind::kChatCompletions,
      R"({"model":"m","messages":[{"role":"user","content":"x"}],"extra":)" + deep + "}");
  EXPECT_TRUE(r.ok()) << r.status().message();
}

TEST(ParseRequest, Errors) {
  auto bad = ParseRequest(ApiKind::kChatCompletions, "{not json");
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseRequest(ApiKind::kChatCompletions, "[1,2]").status().code(),
            ErrorCode::kInvalidArgument);
  auto no_model = ParseRequest(ApiKind::kChatCompletions, R"({"messages":[]})");
  EXPECT_EQ(no_model.status().code(), ErrorCode::kInvalidArgument);  // 400, as OpenAI
  EXPECT_EQ(no_model.status().param(), "model");
  auto numeric_model = ParseRequest(ApiKind::kChatCompletions, R"({"model":5,"messages":[]})");
  EXPECT_EQ(numeric_model.status().code(), ErrorCode::kInvalidArgument);
  auto no_messages = ParseRequest(ApiKind::kChatCompletions, R"({"model":"m"})");
  EXPECT_EQ(no_messages.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(no_messages.status().param(), "messages");
  auto bad_message = ParseRequest(ApiKind::kChatCompletions, Chat("[1]"));
  EXPECT_EQ(bad_message.status().param(), "messages");
  auto no_prompt = ParseRequest(ApiKind::kCompletions, R"({"model":"m"})");
  EXPECT_EQ(no_prompt.status().param(), "prompt");
  auto bad_stream = ParseRequest(ApiKind::kChatCompletions, Chat("[]", R"(,"stream":"yes")"));
  EXPECT_EQ(bad_stream.status().param(), "stream");
}

TEST(UpstreamBody, StreamingForcesIncludeUsage) {
  auto r = ParseRequest(ApiKind::kChatCompletions,
                        Chat("[]", R"(,"stream":true,"stream_options":{"include_usage":false})"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->client_wants_usage);
  auto body = json::parse(UpstreamBody(*r)).as_object();
  EXPECT_TRUE(body.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(body.at("model").as_string(), "m");

  auto plain = ParseRequest(ApiKind::kChatCompletions, Chat("[]"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(json::parse(UpstreamBody(*plain)).as_object().contains("stream_options"));
}

TEST(RenderWithReply, IsAPrefixOfTheNextTurn) {
  auto turn1 = boost::json::parse(R"([{"role":"system","content":"Be brief."},
                                      {"role":"user","content":"Hi"}])");
  auto turn2 = boost::json::parse(R"([{"role":"system","content":"Be brief."},
                                      {"role":"user","content":"Hi"},
                                      {"role":"assistant","content":"Hello there."},
                                      {"role":"user","content":"More?"}])");
  auto r1 = RenderChatText(turn1);
  auto r2 = RenderChatText(turn2);
  ASSERT_TRUE(r1.ok() && r2.ok());
  std::string cached = RenderWithReply(*r1, "Hello there.");
  EXPECT_EQ(r2->substr(0, cached.size()), cached);
  EXPECT_GT(r2->size(), cached.size());
}

}  // namespace
}  // namespace kinference::api
