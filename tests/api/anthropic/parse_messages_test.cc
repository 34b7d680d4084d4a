// ParseMessages: the /v1/messages front's one parse: the translation read as a chat
// completion is, the client's body kept as parsed, untranslatable bodies' routing input.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "api/anthropic/messages_request.h"

namespace kinference::api::anthropic {
namespace {

namespace json = boost::json;

TEST(ParseMessages, TranslationReadsAsTheEquivalentChatCompletion) {
  const std::string body = R"({"model":"m","max_tokens":9,"system":"S","stream":true,
      "stop_sequences":["END"],"messages":[{"role":"user","content":"hi"}]})";
  auto p = ParseMessages(body);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->untranslatable.ok());
  EXPECT_EQ(p->stop_sequences, std::vector<std::string>{"END"});
  // What the two-parse path (translate, serialise, parse as a chat completion) gave.
  auto t = TranslateRequest(body);
  ASSERT_TRUE(t.ok());
  auto chat = ParseRequest(ApiKind::kChatCompletions, json::serialize(t->openai_body));
  ASSERT_TRUE(chat.ok());
  const ParsedRequest& r = p->request;
  EXPECT_EQ(r.body, chat->body);
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.max_tokens, 9);
  EXPECT_EQ(r.prompt_text, chat->prompt_text);
  EXPECT_EQ(r.prompt_text, "system\nS\nuser\nhi\n");
  EXPECT_EQ(r.original, json::parse(body));
}

TEST(ParseMessages, UntranslatableBodyKeepsRoutingInputAndWhy) {
  const std::string body = R"({"model":"m","max_tokens":9,"messages":[{"role":"user","content":[
      {"type":"text","text":"look"},
      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]})";
  auto p = ParseMessages(body);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->untranslatable.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(p->untranslatable.message(), TranslateRequest(body).status().message());
  EXPECT_EQ(p->request.model, "m");
  EXPECT_EQ(p->request.max_tokens, 9);
  EXPECT_EQ(p->request.prompt_text, "user\nlook\n");
  EXPECT_EQ(p->request.original, json::parse(body));
}

TEST(ParseMessages, Errors) {
  EXPECT_EQ(ParseMessages("{nope").status().message().rfind("Invalid JSON in request body", 0), 0u);
  EXPECT_EQ(ParseMessages("[1]").status().message(), "Request body must be a JSON object");
  // Neither translatable nor routable (no model): the translation's error.
  EXPECT_EQ(ParseMessages(R"({"max_tokens":5,"messages":[]})").status().message(),
            "model: Field required");
  // Routable but not translatable: left to an Anthropic provider, if one serves it.
  auto no_max = ParseMessages(R"({"model":"m","messages":[]})");
  ASSERT_TRUE(no_max.ok());
  EXPECT_EQ(no_max->untranslatable.message(), "max_tokens: Field required");
}

}  // namespace
}  // namespace kinference::api::anthropic
