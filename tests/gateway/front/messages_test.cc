// POST /v1/messages through the gateway's request path against in-process fake vLLM
// upstreams: the upstream sees the equivalent chat completion, the client sees the
// Anthropic message / event stream, and failures answer in Anthropic's error shape.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "api/sse.h"
#include "fake_upstream.h"
#include "gateway/gateway.h"
#include "gateway_harness.h"
#include "http/client.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using testing::BreakingUpstream;
using testing::DeadPort;
using testing::FakeMode;
using testing::FakeUpstream;

const std::string kMessage =
    R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hello"}]})";
const std::string kStreamMessage =
    R"({"model":"m","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hello"}]})";

class AnthropicProxyTest : public testing::GatewayHarness {
 protected:
  static std::string Url(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

  void StartGateway(std::vector<std::string> urls) {
    for (auto& f : fakes_) {
      FakeUpstream* fake = f.get();
      OnStop([fake] { fake->Stop(); });
    }
    GatewayConfig c;
    c.max_body_bytes = 1 << 20;
    c.scrape_interval_s = 0.2;
    PoolConfig pool{"p", "m", {}};
    for (const auto& u : urls) pool.endpoints.push_back(ParseEndpointUrl(u, "test"));
    c.pools.push_back(pool);
    Start(c);
  }

  http::Response Post(std::string body, std::string path = "/v1/messages") {
    return Call("POST", std::move(path), std::move(body));
  }

  std::vector<std::unique_ptr<FakeUpstream>> fakes_;
};

// (event, data) pairs of an SSE body.
std::vector<std::pair<std::string, json::value>> Events(const std::string& body) {
  std::vector<std::pair<std::string, json::value>> out;
  api::SseParser p;
  p.Feed(body, [&](const api::SseEvent& ev) { out.emplace_back(ev.event, json::parse(ev.data)); });
  return out;
}

TEST_F(AnthropicProxyTest, NonStreamedMessage) {
  fakes_.push_back(std::make_unique<FakeUpstream>(io_, FakeMode::kOk));
  StartGateway({Url(fakes_[0]->port())});
  auto r = Post(kMessage);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.headers.Find("x-kinference-endpoint").empty());
  auto m = json::parse(r.body);
  EXPECT_EQ(m.at("type"), "message");
  EXPECT_EQ(m.at("model"), "m");
  EXPECT_EQ(m.at("content").at(0).at("type"), "text");
  // The upstream got the equivalent chat completion.
  auto sent = json::parse(fakes_[0]->bodies().at(0));
  EXPECT_EQ(sent.at("messages"), json::parse(R"([{"role":"user","content":"hello"}])"));
  EXPECT_EQ(sent.at("max_tokens"), 16);
}

TEST_F(AnthropicProxyTest, StreamedMessageEndsWithMessageStop) {
  fakes_.push_back(std::make_unique<FakeUpstream>(io_, FakeMode::kOk));
  StartGateway({Url(fakes_[0]->port())});
  auto r = Post(kStreamMessage);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("content-type"), "text/event-stream");
  auto ev = Events(r.body);
  ASSERT_GE(ev.size(), 6u) << r.body;
  EXPECT_EQ(ev.front().first, "message_start");
  EXPECT_EQ(ev[ev.size() - 2].first, "message_delta");
  EXPECT_EQ(ev.back().first, "message_stop");
  EXPECT_GT(ev[ev.size() - 2].second.at("usage").at("output_tokens").as_int64(), 0);
  auto sent = json::parse(fakes_[0]->bodies().at(0));
  EXPECT_EQ(sent.at("stream_options").at("include_usage"), true);
}

TEST_F(AnthropicProxyTest, FailureAfterFirstByteEndsStreamWithErrorEvent) {
  BreakingUpstream breaking;
  StartGateway({Url(breaking.port())});
  auto r = Post(kStreamMessage);
  EXPECT_EQ(r.status, 200);
  auto ev = Events(r.body);
  ASSERT_FALSE(ev.empty()) << r.body;
  EXPECT_EQ(ev.front().first, "message_start");
  EXPECT_EQ(ev.back().first, "error");
  EXPECT_EQ(ev.back().second.at("type"), "error");
  EXPECT_EQ(ev.back().second.at("error").at("type"), "api_error");
  for (const auto& [name, _] : ev) EXPECT_NE(name, "message_stop");
}

TEST_F(AnthropicProxyTest, ErrorsInAnthropicShape) {
  StartGateway({Url(DeadPort())});
  auto no_capacity = Post(kMessage);
  EXPECT_EQ(no_capacity.status, 529);
  EXPECT_EQ(json::parse(no_capacity.body).at("error").at("type"), "overloaded_error");
  auto bad = Post("{\"model\": [");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body),
            json::parse(R"({"type":"error","error":{"type":"invalid_request_error",
                "message":"Invalid JSON in request body: incomplete JSON"}})"));
  auto unknown =
      Post(R"({"model":"nope","max_tokens":4,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body).at("error").at("type"), "not_found_error");
  auto no_max = Post(R"({"model":"m","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(no_max.status, 400);
  EXPECT_EQ(json::parse(no_max.body).at("error").at("message"), "max_tokens: Field required");
  // The OpenAI routes keep their own error shape.
  auto openai = Post(R"({"model":"nope","messages":[]})", "/v1/chat/completions");
  EXPECT_EQ(openai.status, 404);
  EXPECT_TRUE(json::parse(openai.body).at("error").at("param").is_string());
}

// The upstream's 5xx body stays in the log: the client gets the gateway's message (502).
TEST_F(AnthropicProxyTest, UpstreamServerErrorIsRetriedThenAnsweredInAnthropicShape) {
  fakes_.push_back(std::make_unique<FakeUpstream>(io_, FakeMode::kFail500));
  fakes_.push_back(std::make_unique<FakeUpstream>(io_, FakeMode::kFail500));
  StartGateway({Url(fakes_[0]->port()), Url(fakes_[1]->port())});
  auto r = Post(kMessage);
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(json::parse(r.body).at("type"), "error");
  EXPECT_EQ(json::parse(r.body).at("error").at("type"), "api_error");
  EXPECT_EQ(r.body.find("boom"), std::string::npos) << r.body;  // the upstream's words
  EXPECT_EQ(fakes_[0]->requests() + fakes_[1]->requests(), 2);
}

// A local vLLM started with --api-key rejecting the gateway's key: the gateway's own
// credential, so 502 in each front's shape, never the upstream's 401.
TEST_F(AnthropicProxyTest, LocalEndpointRejectingTheKeyIsABadGateway) {
  fakes_.push_back(std::make_unique<FakeUpstream>(io_, FakeMode::kUnauthorized));
  StartGateway({Url(fakes_[0]->port())});
  auto r = Post(kMessage);
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(R"j({"type":"error","error":{"type":"api_error",
                "message":"upstream p/0 rejected the gateway's credentials (401)"}})j"));
  auto s = Post(kStreamMessage);
  EXPECT_EQ(s.status, 502) << s.body;
  EXPECT_EQ(json::parse(s.body).at("error").at("type"), "api_error");
  auto o =
      Post(R"({"model":"m","messages":[{"role":"user","content":"x"}]})", "/v1/chat/completions");
  EXPECT_EQ(o.status, 502) << o.body;
  EXPECT_EQ(json::parse(o.body).at("error").at("message"),
            "upstream p/0 rejected the gateway's credentials (401)");
  EXPECT_EQ(json::parse(o.body).at("error").at("code"), 502);
}

// A policy sending the request to an alternative model: the Anthropic message (whole or
// streamed) names the model that served, as x-kinference-model does.
TEST_F(AnthropicProxyTest, PolicyAlternativeIsTheReportedModel) {
  fakes_.push_back(std::make_unique<FakeUpstream>(io_, FakeMode::kOk));
  fakes_.push_back(std::make_unique<FakeUpstream>(io_, FakeMode::kOk));
  for (auto& f : fakes_) {
    FakeUpstream* fake = f.get();
    OnStop([fake] { fake->Stop(); });
  }
  char tmpl[] = "/tmp/kinference-anth-policy-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string policy = dir + "/to-small.yaml";
  std::ofstream(policy) << "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\n"
                           "metadata: {name: to-small}\nspec:\n  mode: enforce\n"
                           "  alternatives: [{model: small, toleranceSeconds: 1000}]\n";
  GatewayConfig c;
  c.scrape_interval_s = 0.2;
  c.policies.files = {policy};
  c.policies.reload_interval_s = 0;
  c.pools.push_back(PoolConfig{"p", "m", {ParseEndpointUrl(Url(fakes_[0]->port()), "t")}});
  c.pools.push_back(PoolConfig{"s", "small", {ParseEndpointUrl(Url(fakes_[1]->port()), "t")}});
  Start(c);
  auto r = Post(kMessage);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("x-kinference-model"), "small");
  EXPECT_EQ(json::parse(r.body).at("model"), "small");
  auto s = Post(kStreamMessage);
  ASSERT_EQ(s.status, 200) << s.body;
  auto ev = Events(s.body);
  ASSERT_FALSE(ev.empty()) << s.body;
  EXPECT_EQ(ev.front().first, "message_start");
  EXPECT_EQ(ev.front().second.at("message").at("model"), "small");
  EXPECT_EQ(fakes_[0]->requests(), 0);
}

}  // namespace
}  // namespace kinference::gateway
