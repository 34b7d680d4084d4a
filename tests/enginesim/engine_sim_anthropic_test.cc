// engine-sim's Anthropic-compatible mode (POST /v1/messages, enginesim/anthropic_api.h):
// header checks, whole and streamed answers with Anthropic's exact event sequence.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/sse.h"
#include "http/client.h"
#include "testing/process.h"

namespace kinference::enginesim {
namespace {

namespace json = boost::json;

class EngineSimAnthropicTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    proc_ = testing::ChildProcess::Start(
        {testing::KinferenceBin(), "engine-sim", "--port", "0", "--time-scale", "1000",
         "--served-model-name", "claude-sim", "--require-api-key", "sk-sim"},
        "engine-sim listening on", 30, &error);
    ASSERT_NE(proc_, nullptr) << error;
  }
  static void TearDownTestSuite() { proc_.reset(); }

  static http::Response Post(const std::string& body, const std::string& key = "sk-sim",
                             const std::string& version = "2023-06-01",
                             const std::string& target = "/v1/messages") {
    http::ClientRequest r;
    r.port = proc_->port();
    r.target = target;
    r.body = body;
    if (!key.empty()) r.headers.Add("x-api-key", key);
    if (!version.empty()) r.headers.Add("anthropic-version", version);
    r.header_timeout_s = 30;  // hang guard
    auto res = http::FetchSync(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : http::Response{};
  }

  static inline std::unique_ptr<testing::ChildProcess> proc_;
};

const std::string kBody =
    R"({"model":"claude-sim","max_tokens":4,"ignore_eos":true,"messages":[{"role":"user","content":"hi"}])";

TEST_F(EngineSimAnthropicTest, WholeMessage) {
  auto r = Post(kBody + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  json::value v = json::parse(r.body);
  EXPECT_EQ(v.at("type"), "message");
  EXPECT_TRUE(v.at("id").as_string().starts_with("msg_"));
  EXPECT_EQ(v.at("model"), "claude-sim");
  EXPECT_EQ(v.at("stop_reason"), "max_tokens");
  EXPECT_EQ(v.at("content").at(0).at("type"), "text");
  EXPECT_EQ(v.at("usage").at("output_tokens"), 4);
  EXPECT_GT(v.at("usage").at("input_tokens").as_int64(), 0);
}

TEST_F(EngineSimAnthropicTest, StreamFollowsAnthropicsEventSequence) {
  auto r = Post(kBody + R"(,"stream":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<api::SseEvent> events;
  api::SseParser parser;
  parser.Feed(r.body, [&](const api::SseEvent& e) { events.push_back(e); });
  std::vector<std::string> types;
  for (const auto& e : events) {
    EXPECT_EQ(json::parse(e.data).at("type").as_string(), e.event);  // event: matches type
    types.push_back(e.event);
  }
  std::vector<std::string> expected = {"message_start", "content_block_start", "ping"};
  for (int i = 0; i < 4; ++i) expected.push_back("content_block_delta");
  for (const char* t : {"content_block_stop", "message_delta", "message_stop"})
    expected.push_back(t);
  EXPECT_EQ(types, expected) << r.body;
  json::value delta = json::parse(events[events.size() - 2].data);
  EXPECT_EQ(delta.at("delta").at("stop_reason"), "max_tokens");
  EXPECT_EQ(delta.at("usage").at("output_tokens"), 4);
}

TEST_F(EngineSimAnthropicTest, HeaderAndKeyChecks) {
  auto no_version = Post(kBody + "}", "sk-sim", "");
  EXPECT_EQ(no_version.status, 400);
  EXPECT_EQ(json::parse(no_version.body),
            json::parse(R"({"type":"error","error":{"type":"invalid_request_error",
                "message":"anthropic-version: header is required"}})"));
  auto no_key = Post(kBody + "}", "");
  EXPECT_EQ(no_key.status, 401);
  EXPECT_EQ(json::parse(no_key.body).at("error").at("type"), "authentication_error");
  auto wrong = Post(kBody + "}", "sk-other");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(json::parse(wrong.body).at("error").at("message"), "invalid x-api-key");
  auto model =
      Post(R"({"model":"other","max_tokens":4,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(model.status, 404);
  EXPECT_EQ(json::parse(model.body).at("error").at("type"), "not_found_error");
  auto bad = Post(R"({"model":"claude-sim","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body).at("error").at("message"), "max_tokens: Field required");
  // The OpenAI routes want the key as a bearer token (vLLM's --api-key).
  auto openai = Post(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":1})", "sk-sim", "",
                     "/v1/chat/completions");
  EXPECT_EQ(openai.status, 401);
}

}  // namespace
}  // namespace kinference::enginesim
