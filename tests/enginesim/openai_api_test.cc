// Request parsing and response shapes of engine-sim's OpenAI surface (pure functions).
#include "enginesim/openai_api.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/tokenizer.h"
#include "engine/chat_template.h"

namespace kinference::enginesim {
namespace {

namespace json = boost::json;

TEST(ParseCompletion, PromptForms) {
  auto a = ParseCompletionRequest(R"({"model":"m","prompt":" a b c"})");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->prompt, Tokenize(" a b c"));
  EXPECT_EQ(a->model, "m");
  EXPECT_FALSE(a->max_tokens.has_value());
  auto b = ParseCompletionRequest(R"({"prompt":[5,6,7]})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->prompt, (std::vector<TokenId>{5, 6, 7}));
  auto c = ParseCompletionRequest(R"({"prompt":[" x y"]})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->prompt, Tokenize(" x y"));
  auto d = ParseCompletionRequest(R"({"prompt":[[9,8]]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->prompt, (std::vector<TokenId>{9, 8}));
}

TEST(ParseCompletion, Fields) {
  auto r = ParseCompletionRequest(
      R"({"prompt":"x","max_tokens":7,"stream":true,"stream_options":{"include_usage":true},
          "ignore_eos":true,"seed":42,"temperature":0.7,"top_p":1})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->max_tokens, 7);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_TRUE(r->ignore_eos);
  EXPECT_EQ(r->seed, 42u);
}

TEST(ParseCompletion, Errors) {
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"prompt":)", "body"},  // vLLM's location of a body it cannot validate
      {R"([1,2])", "body"},
      {R"({})", "prompt"},
      {R"({"prompt":""})", "prompt"},
      {R"({"prompt":[]})", "prompt"},
      {R"({"prompt":["a","b"]})", "prompt"},
      {R"({"prompt":[1,-2]})", "prompt"},
      {R"({"prompt":3})", "prompt"},
      {R"({"prompt":"x","max_tokens":0})", "max_tokens"},
      {R"({"prompt":"x","max_tokens":"5"})", "max_tokens"},
      {R"({"prompt":"x","stream":"yes"})", "stream"},
      {R"({"prompt":"x","stream_options":{"include_usage":true}})", "stream_options"},
      {R"({"prompt":"x","model":5})", "model"},
      {R"({"prompt":"x","n":2})", "n"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    auto r = ParseCompletionRequest(c.body);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.status().param(), c.param);
  }
}

TEST(ParseChat, RendersChatTemplate) {
  auto r = ParseChatRequest(R"({"messages":[{"role":"system","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"hel"},{"type":"text","text":"lo"}]}],
      "max_completion_tokens":3,"max_tokens":9})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->chat);
  EXPECT_EQ(r->prompt,
            Tokenize(engine::ApplyChatTemplate({{"system", "be brief"}, {"user", "hello"}}, true)));
  EXPECT_EQ(r->max_tokens, 3);  // max_completion_tokens wins
}

TEST(ParseChat, Errors) {
  for (const char* body :
       {R"({"messages":[]})", R"({"messages":"hi"})", R"({"messages":[{"content":"x"}]})",
        R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
        R"({"messages":[{"role":"user","content":7}]})"}) {
    SCOPED_TRACE(body);
    auto r = ParseChatRequest(body);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().param(), "messages");
  }
}

TEST(ResolveRequest, ModelAndLengths) {
  GenerationRequest r;
  r.prompt = std::vector<TokenId>(100, 1);
  r.model = "other";
  Status s = ResolveRequest(r, "served", 1000);
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.message(), "The model `other` does not exist.");

  r.model = "served";
  ASSERT_TRUE(ResolveRequest(r, "served", 1000).ok());
  EXPECT_EQ(r.max_tokens, 16);  // completions default

  GenerationRequest chat;
  chat.chat = true;
  chat.prompt = std::vector<TokenId>(100, 1);
  ASSERT_TRUE(ResolveRequest(chat, "served", 1000).ok());
  EXPECT_EQ(chat.max_tokens, 900);  // chat default: the rest of the context

  GenerationRequest big;
  big.prompt = std::vector<TokenId>(990, 1);
  big.max_tokens = 11;
  s = ResolveRequest(big, "served", 1000);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("maximum context length is 1000"), std::string::npos);
}

TEST(VllmErrorBody, Shape) {
  Status s(ErrorCode::kInvalidArgument, "bad");
  s.WithParam("prompt");
  auto e = json::parse(VllmErrorBody(s)).at("error");
  EXPECT_EQ(e.at("message").as_string(), "bad");
  EXPECT_EQ(e.at("type").as_string(), "BadRequestError");
  EXPECT_EQ(e.at("param").as_string(), "prompt");
  EXPECT_EQ(e.at("code").as_int64(), 400);
  auto n = json::parse(VllmErrorBody(Status(ErrorCode::kNotFound, "x"))).at("error");
  EXPECT_EQ(n.at("type").as_string(), "NotFoundError");
  EXPECT_EQ(n.at("code").as_int64(), 404);
  EXPECT_TRUE(n.at("param").is_null());
}

TEST(Format, Shapes) {
  ResponseMeta chat{"chatcmpl-1", 1700000000, "m", true};
  ResponseMeta cmpl{"cmpl-1", 1700000000, "m", false};
  Usage u{10, 3, 8};
  auto full = json::parse(FormatResponse(chat, "hi", "length", u)).as_object();
  EXPECT_EQ(full.at("object").as_string(), "chat.completion");
  EXPECT_EQ(full.at("choices").at(0).at("message").at("content").as_string(), "hi");
  EXPECT_EQ(full.at("choices").at(0).at("message").at("role").as_string(), "assistant");
  EXPECT_EQ(full.at("usage").at("total_tokens").as_int64(), 13);
  EXPECT_EQ(full.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64(), 8);
  auto text = json::parse(FormatResponse(cmpl, "hi", "stop", u)).as_object();
  EXPECT_EQ(text.at("object").as_string(), "text_completion");
  EXPECT_EQ(text.at("choices").at(0).at("text").as_string(), "hi");
  EXPECT_EQ(text.at("choices").at(0).at("finish_reason").as_string(), "stop");

  auto role = json::parse(FormatRoleChunk(chat));
  EXPECT_EQ(role.at("choices").at(0).at("delta").at("role").as_string(), "assistant");
  EXPECT_EQ(role.at("choices").at(0).at("delta").at("content").as_string(), "");
  auto tok = json::parse(FormatTokenChunk(chat, " a", std::nullopt));
  EXPECT_EQ(tok.at("object").as_string(), "chat.completion.chunk");
  EXPECT_EQ(tok.at("choices").at(0).at("delta").at("content").as_string(), " a");
  EXPECT_TRUE(tok.at("choices").at(0).at("finish_reason").is_null());
  auto last = json::parse(FormatTokenChunk(cmpl, " b", "length"));
  EXPECT_EQ(last.at("choices").at(0).at("text").as_string(), " b");
  EXPECT_EQ(last.at("choices").at(0).at("finish_reason").as_string(), "length");
  auto usage = json::parse(FormatUsageChunk(chat, u));
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(usage.at("usage").at("completion_tokens").as_int64(), 3);
}

TEST(Format, FollowsVllmKeyForKey) {
  ResponseMeta chat{"chatcmpl-1", 1700000000, "m", true};
  ResponseMeta cmpl{"cmpl-1", 1700000000, "m", false};
  Usage u{300, 3, 128, 128};
  auto full = json::parse(FormatResponse(chat, "hi", "length", u)).as_object();
  const auto& d = full.at("usage").at("prompt_tokens_details");
  EXPECT_EQ(d.at("created_cache_tokens").as_int64(), 128);
  EXPECT_TRUE(d.at("multimodal_tokens").is_null());
  EXPECT_TRUE(full.at("usage").at("completion_tokens_details").is_null());
  EXPECT_TRUE(full.at("choices").at(0).at("message").at("refusal").is_null());
  EXPECT_EQ(full.at("system_fingerprint").as_string(), kSystemFingerprint);
  EXPECT_TRUE(full.at("kv_transfer_params").is_null());
  // A whole completions response: created_cache_tokens null; a streamed one: absent.
  auto text = json::parse(FormatResponse(cmpl, "hi", "stop", u)).as_object();
  EXPECT_TRUE(text.at("usage").at("prompt_tokens_details").at("created_cache_tokens").is_null());
  auto su = json::parse(FormatUsageChunk(cmpl, u)).at("usage").as_object();
  EXPECT_FALSE(su.at("prompt_tokens_details").as_object().contains("created_cache_tokens"));
  EXPECT_FALSE(su.contains("completion_tokens_details"));
  // The last chunk carries system_fingerprint; a chat token chunk has stop_reason only
  // with its finish reason.
  auto tok = json::parse(FormatTokenChunk(chat, " a", std::nullopt)).as_object();
  EXPECT_FALSE(tok.contains("system_fingerprint"));
  EXPECT_FALSE(tok.at("choices").at(0).as_object().contains("stop_reason"));
  auto last = json::parse(FormatTokenChunk(chat, " b", "length", true)).as_object();
  EXPECT_EQ(last.at("system_fingerprint").as_string(), kSystemFingerprint);
  EXPECT_TRUE(last.at("choices").at(0).at("stop_reason").is_null());
}

}  // namespace
}  // namespace kinference::enginesim
