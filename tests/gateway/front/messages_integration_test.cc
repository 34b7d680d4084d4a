// POST /v1/messages end to end on loopback with real processes: two `kinference
// engine-sim` replicas behind `kinference gateway`. Assertions are on behaviour (event
// order, token counts, routing and cache accounting), never on wall-clock times.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>
#include <memory>

#include "api/sse.h"
#include "common/tokenizer.h"
#include "http/client.h"
#include "testing/launch.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::ChildProcess;
using kinference::testing::LaunchKinference;

constexpr const char* kModel = "claude-local";
constexpr const char* kTimeScale = "20";

class AnthropicIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string path = ::testing::TempDir() + "/anthropic-gw-" + std::to_string(getpid()) + ".yaml";
    std::ofstream out(path);
    out << "listen: {address: 127.0.0.1, port: 0}\nscrape_interval_s: 2.0\ntime_scale: "
        << kTimeScale << "\nmax_body_bytes: 1048576\npools:\n  - name: sim\n    model: " << kModel
        << "\n    endpoints:\n";
    for (int i = 0; i < 2; ++i) {
      sims_.push_back(LaunchKinference({"engine-sim", "--port", "0", "--time-scale", kTimeScale,
                                        "--served-model-name", kModel}));
      out << "      - http://127.0.0.1:" << (sims_.back() ? sims_.back()->port() : 1) << "\n";
    }
    out.close();
    gateway_ = LaunchKinference({"gateway", "--config", path});
  }
  static void TearDownTestSuite() {
    gateway_.reset();
    sims_.clear();
  }
  void SetUp() override {
    for (const auto& s : sims_) ASSERT_TRUE(s) << "engine-sim did not start";
    ASSERT_TRUE(gateway_) << "gateway did not start";
  }

  static http::Response Call(std::string method, std::string target, std::string body = {}) {
    http::ClientRequest r;
    r.method = std::move(method);
    r.port = gateway_->port();
    r.target = std::move(target);
    r.body = std::move(body);
    r.header_timeout_s = 60;  // hang guard only
    auto res = http::FetchSync(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : http::Response{};
  }
  static http::Response Messages(const json::object& body) {
    return Call("POST", "/v1/messages", json::serialize(body));
  }
  static json::object Body(const std::string& content, int max_tokens, bool stream) {
    return json::object{
        {"model", kModel},
        {"max_tokens", max_tokens},
        {"stream", stream},
        {"ignore_eos", true},
        {"messages", json::array{json::object{{"role", "user"}, {"content", content}}}}};
  }

  static inline std::vector<std::unique_ptr<ChildProcess>> sims_;
  static inline std::unique_ptr<ChildProcess> gateway_;
};

TEST_F(AnthropicIntegrationTest, NonStreamedMessage) {
  auto r = Messages(Body("Say hello", 6, false));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.headers.Find("x-kinference-endpoint").empty());
  auto m = json::parse(r.body).as_object();
  EXPECT_EQ(m.at("type"), "message");
  EXPECT_EQ(m.at("role"), "assistant");
  EXPECT_EQ(m.at("model"), kModel);
  EXPECT_TRUE(m.at("id").as_string().starts_with("msg_"));
  EXPECT_FALSE(m.at("content").at(0).at("text").as_string().empty());
  EXPECT_EQ(m.at("stop_reason"), "max_tokens");
  EXPECT_EQ(m.at("usage").at("output_tokens"), 6);
  EXPECT_GT(m.at("usage").at("input_tokens").as_int64(), 0);
}

TEST_F(AnthropicIntegrationTest, StreamedMessageEventSequence) {
  auto r = Messages(Body("Say hello", 5, true));
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> names;
  std::vector<json::value> data;
  api::SseParser p;
  p.Feed(r.body, [&](const api::SseEvent& ev) {
    names.push_back(ev.event);
    data.push_back(json::parse(ev.data));
  });
  std::vector<std::string> expected{"message_start", "content_block_start", "ping"};
  for (int i = 0; i < 5; ++i) expected.push_back("content_block_delta");
  expected.insert(expected.end(), {"content_block_stop", "message_delta", "message_stop"});
  EXPECT_EQ(names, expected) << r.body;
  ASSERT_EQ(data.size(), expected.size());
  const auto& usage = data[data.size() - 2].at("usage");
  EXPECT_EQ(usage.at("output_tokens"), 5);
  EXPECT_GT(usage.at("input_tokens").as_int64(), 0);
  EXPECT_EQ(data[data.size() - 2].at("delta").at("stop_reason"), "max_tokens");
}

TEST_F(AnthropicIntegrationTest, RoutedAndCachedLikeTheEquivalentChatCompletion) {
  // A chat completion warms one replica's prefix cache; the same conversation sent as a
  // Messages request must be routed to that replica and report the hit, counted once.
  std::string prompt = SyntheticText(/*seed=*/777, 2000);
  json::object chat{{"model", kModel},
                    {"max_tokens", 2},
                    {"messages", json::array{json::object{{"role", "user"}, {"content", prompt}}}}};
  auto first = Call("POST", "/v1/chat/completions", json::serialize(chat));
  ASSERT_EQ(first.status, 200) << first.body;
  int64_t prompt_tokens = json::parse(first.body).at("usage").at("prompt_tokens").as_int64();

  auto second = Messages(Body(prompt, 2, false));
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(first.headers.Find("x-kinference-endpoint"),
            second.headers.Find("x-kinference-endpoint"));
  auto usage = json::parse(second.body).at("usage").as_object();
  int64_t cached = usage.at("cache_read_input_tokens").as_int64();
  EXPECT_GT(2 * cached, prompt_tokens);
  EXPECT_EQ(usage.at("input_tokens").as_int64() + cached, prompt_tokens);
  EXPECT_EQ(usage.at("cache_creation_input_tokens"), 0);

  std::string metrics = Call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("kinference_cached_tokens_total{tenant=\"default\",model=\"" +
                         std::string(kModel) + "\"}"),
            std::string::npos);
}

TEST_F(AnthropicIntegrationTest, ErrorStatuses) {
  auto unknown = Messages(
      json::object{{"model", "nope"},
                   {"max_tokens", 4},
                   {"messages", json::array{json::object{{"role", "user"}, {"content", "x"}}}}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body).at("error").at("type"), "not_found_error");
  // Upstream (engine-sim) refuses a prompt beyond its context: relayed as Anthropic 400.
  auto too_long = Messages(Body("x", 100000000, false));
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_EQ(json::parse(too_long.body).at("error").at("type"), "invalid_request_error");
  // Oversized bodies are refused by the HTTP server before routing: 413 in Anthropic's
  // shape, with a request id like every other response.
  auto big = Messages(Body(std::string(2 << 20, 'x'), 4, false));
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(json::parse(big.body).at("error").at("type"), "request_too_large") << big.body;
  EXPECT_TRUE(big.headers.Find("x-request-id").starts_with("kgw-")) << big.body;
}

}  // namespace
}  // namespace kinference::gateway
