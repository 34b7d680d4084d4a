// End to end with real processes: `kinference engine-sim` in its Anthropic-compatible
// mode (POST /v1/messages, x-api-key required) over HTTPS plays an Anthropic provider
// behind `kinference gateway`: OpenAI chat requests translated both ways (whole,
// streamed, with a tool call round trip), /v1/messages passed through with the same
// bytes a direct call gets (modulo the ids, sampled text and cache counts that differ
// between two calls), key errors, and usage counted once in the gateway's /metrics.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>
#include <regex>

#include "../../http/tls_fake_server.h"
#include "api/sse.h"
#include "http/client.h"
#include "testing/launch.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::ChildProcess;
using kinference::testing::LaunchKinference;

class AnthropicProviderIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = kinference::testing::MakeTestCert("sim");
    ASSERT_FALSE(cert_.cert_file.empty()) << "openssl CLI failed";
    sim_ =
        LaunchKinference({"engine-sim", "--port", "0", "--time-scale", "50", "--served-model-name",
                          "claude-sim", "--require-api-key", "sk-ant-upstream", "--tls-cert",
                          cert_.cert_file, "--tls-key", cert_.key_file});
    ASSERT_TRUE(sim_);
    gw_ = StartGateway("sk-ant-upstream");
    ASSERT_TRUE(gw_);
  }
  void TearDown() override {
    for (const auto& f : configs_) std::remove(f.c_str());
  }

  std::unique_ptr<ChildProcess> StartGateway(const std::string& key) {
    std::string config = ::testing::TempDir() + "/anthropic-gw-" + std::to_string(getpid()) + "-" +
                         std::to_string(configs_.size()) + ".yaml";
    configs_.push_back(config);
    {
      std::ofstream out(config);
      out << "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 50\n"
          << "providers:\n  - name: claude\n    api: anthropic\n    model: claude-sim\n"
          << "    serves_model: m\n    base_url: https://127.0.0.1:" << sim_->port() << "\n"
          << "    api_key_env: KINFERENCE_IT_ANTHROPIC_KEY\n"
          << "    retries_before_first_byte: 0\n"
          << "    ca_file: " << cert_.cert_file << "\n";
    }
    setenv("KINFERENCE_IT_ANTHROPIC_KEY", key.c_str(), 1);
    auto gw = LaunchKinference({"gateway", "--config", config});
    unsetenv("KINFERENCE_IT_ANTHROPIC_KEY");
    return gw;
  }

  http::Response Post(uint16_t port, const std::string& target, const std::string& body,
                      bool direct = false) {
    http::ClientRequest r;
    r.port = port;
    r.target = target;
    r.body = body;
    if (target == "/v1/messages") r.headers.Add("anthropic-version", "2023-06-01");
    if (direct) {
      r.tls = true;
      r.ca_file = cert_.cert_file;
      r.headers.Add("x-api-key", "sk-ant-upstream");
    }
    r.header_timeout_s = 60;  // hang guard only
    auto res = http::FetchSync(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : http::Response{};
  }

  double Metric(const std::string& series) {
    http::ClientRequest m;
    m.method = "GET";
    m.port = gw_->port();
    m.target = "/metrics";
    auto r = http::FetchSync(m);
    EXPECT_TRUE(r.ok());
    size_t at = r.ok() ? r->body.find(series + " ") : std::string::npos;
    if (at == std::string::npos) return 0;
    return std::stod(r->body.substr(at + series.size() + 1));
  }

  kinference::testing::TestCert cert_;
  std::unique_ptr<ChildProcess> sim_, gw_;
  std::vector<std::string> configs_;
};

// What differs between two calls: message ids, sampled text, prompt-cache counts.
std::string Normalize(std::string s) {
  // engine-sim's own ids are hex; through the gateway they are msg_<x-request-id>.
  s = std::regex_replace(s, std::regex(R"("id":"msg_[^"]+")"), R"("id":"msg_X")");
  s = std::regex_replace(s, std::regex(R"re("text":"(?:[^"\\]|\\.)*")re"), R"("text":"T")");
  return std::regex_replace(
      s,
      std::regex(R"re("(input_tokens|cache_read_input_tokens|cache_creation_input_tokens)":\d+)re"),
      R"("$1":0)");
}

const std::string kMessages =
    R"({"model":"m","max_tokens":6,"ignore_eos":true,"messages":[{"role":"user","content":"Say hi"}])";

TEST_F(AnthropicProviderIntegrationTest, OpenAiChatThroughAnthropicProvider) {
  auto r = Post(gw_->port(), "/v1/chat/completions",
                R"({"model":"m","max_tokens":5,"messages":[{"role":"system","content":"s"},
                    {"role":"user","content":"hello"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "provider/claude");
  json::value v = json::parse(r.body);
  EXPECT_EQ(v.at("object"), "chat.completion");
  EXPECT_EQ(v.at("model"), "claude-sim");
  EXPECT_TRUE(v.at("choices").at(0).at("message").at("content").is_string());
  EXPECT_GT(v.at("usage").at("prompt_tokens").as_int64(), 0);

  auto s =
      Post(gw_->port(), "/v1/chat/completions",
           R"({"model":"m","max_tokens":5,"stream":true,"stream_options":{"include_usage":true},
                    "messages":[{"role":"user","content":"hello"}]})");
  ASSERT_EQ(s.status, 200) << s.body;
  std::vector<api::SseEvent> events;
  api::SseParser parser;
  parser.Feed(s.body, [&](const api::SseEvent& e) { events.push_back(e); });
  ASSERT_GE(events.size(), 4u) << s.body;
  EXPECT_EQ(events.back().data, "[DONE]");
  json::value usage = json::parse(events[events.size() - 2].data);
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_LE(usage.at("usage").at("completion_tokens").as_int64(), 5);
  EXPECT_EQ(json::parse(events[0].data).at("object"), "chat.completion.chunk");
}

TEST_F(AnthropicProviderIntegrationTest, ToolCallRoundTrip) {
  auto r = Post(gw_->port(), "/v1/chat/completions", R"({"model":"m","max_tokens":4,
      "tools":[{"type":"function","function":{"name":"get_weather",
        "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
      "tool_choice":"auto",
      "messages":[{"role":"user","content":"Weather in Paris?"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
          "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"sunny"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body).at("object"), "chat.completion");
}

TEST_F(AnthropicProviderIntegrationTest, MessagesPassThroughAsTheProviderSendsThem) {
  auto direct = Post(
      sim_->port(), "/v1/messages",
      R"({"model":"claude-sim","max_tokens":6,"ignore_eos":true,"messages":[{"role":"user","content":"Say hi"}]})",
      true);
  ASSERT_EQ(direct.status, 200) << direct.body;
  auto via = Post(gw_->port(), "/v1/messages", kMessages + "}");
  ASSERT_EQ(via.status, 200) << via.body;
  EXPECT_EQ(Normalize(via.body), Normalize(direct.body));
  EXPECT_NE(Normalize(via.body).find(R"("model":"claude-sim")"), std::string::npos);

  const std::string stream = R"(,"stream":true})";
  auto direct_s = Post(
      sim_->port(), "/v1/messages",
      R"({"model":"claude-sim","max_tokens":6,"ignore_eos":true,"messages":[{"role":"user","content":"Say hi"}])" +
          stream,
      true);
  auto via_s = Post(gw_->port(), "/v1/messages", kMessages + stream);
  ASSERT_EQ(via_s.status, 200) << via_s.body;
  EXPECT_EQ(Normalize(via_s.body), Normalize(direct_s.body));
  EXPECT_NE(via_s.body.find("event: message_stop"), std::string::npos);
}

TEST_F(AnthropicProviderIntegrationTest, CachedTokensCountedOnceInMetrics) {
  // A long shared prefix, so the second call reads the first one's cached blocks.
  std::string prompt(2000, 'a');
  for (size_t i = 0; i < prompt.size(); i += 7) prompt[i] = ' ';
  const std::string body =
      R"({"model":"m","max_tokens":3,"ignore_eos":true,"messages":[{"role":"user","content":")" +
      prompt + R"("}]})";
  int64_t prompt_sum = 0, cached_sum = 0;
  for (int i = 0; i < 2; ++i) {
    auto r = Post(gw_->port(), "/v1/messages", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const json::value v = json::parse(r.body);
    const json::value& u = v.at("usage");
    prompt_sum += u.at("input_tokens").as_int64() + u.at("cache_read_input_tokens").as_int64() +
                  u.at("cache_creation_input_tokens").as_int64();
    cached_sum += u.at("cache_read_input_tokens").as_int64();
  }
  EXPECT_GT(cached_sum, 0);
  const std::string series = "{tenant=\"default\",model=\"m\"}";
  EXPECT_EQ(Metric("kinference_prompt_tokens_total" + series), prompt_sum);
  EXPECT_EQ(Metric("kinference_cached_tokens_total" + series), cached_sum);
  EXPECT_EQ(Metric("kinference_uncached_tokens_total" + series), prompt_sum - cached_sum);
}

// The provider rejecting the gateway's key is no fault of the client: 502 on both fronts.
TEST_F(AnthropicProviderIntegrationTest, WrongProviderKeyIsABadGateway) {
  auto bad = StartGateway("sk-wrong");
  ASSERT_TRUE(bad);
  auto chat = Post(bad->port(), "/v1/chat/completions",
                   R"({"model":"m","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(chat.status, 502);
  EXPECT_NE(chat.body.find("rejected the gateway's credentials (401)"), std::string::npos)
      << chat.body;
  auto msg = Post(bad->port(), "/v1/messages", kMessages + "}");
  EXPECT_EQ(msg.status, 502);
  EXPECT_EQ(json::parse(msg.body).at("error").at("type"), "api_error") << msg.body;
  EXPECT_EQ(msg.body.find("authentication_error"), std::string::npos) << msg.body;
}

}  // namespace
}  // namespace kinference::gateway
