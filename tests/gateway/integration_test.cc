// End to end on loopback with real processes: three `kinference engine-sim` replicas
// behind `kinference gateway`. Assertions are on behaviour, never on wall-clock times.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>

#include "common/tokenizer.h"
#include "http/client.h"
#include "routing/metrics_snapshot.h"
#include "testing/launch.h"
#include "testing/wire.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::ChildProcess;
using kinference::testing::LaunchKinference;
using kinference::testing::SseEvents;

std::string Url(const ChildProcess& p) { return "http://127.0.0.1:" + std::to_string(p.port()); }

constexpr const char* kModel = "test-model";
constexpr const char* kTimeScale = "20";

std::string WriteConfig(const std::string& name, const std::vector<std::string>& urls) {
  std::string path = ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid()) + ".yaml";
  std::ofstream out(path);
  out << "listen: {address: 127.0.0.1, port: 0}\n"
      << "scrape_interval_s: 2.0\ntime_scale: " << kTimeScale << "\n"
      << "max_body_bytes: 1048576\n"
      << "pools:\n  - name: sim\n    model: " << kModel << "\n    endpoints:\n";
  for (const auto& u : urls) out << "      - " << u << "\n";
  return path;
}

std::string ChatBody(const std::string& content, bool stream, int max_tokens,
                     const std::string& extra = "") {
  json::object body{{"model", kModel},
                    {"messages", json::array{json::object{{"role", "user"}, {"content", content}}}},
                    {"max_tokens", max_tokens},
                    {"stream", stream}};
  std::string s = json::serialize(body);
  if (!extra.empty()) s.insert(s.size() - 1, "," + extra);
  return s;
}

class GatewayIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<std::string> urls;
    for (int i = 0; i < 3; ++i) {
      sims_.push_back(LaunchKinference({"engine-sim", "--port", "0", "--time-scale", kTimeScale,
                                        "--served-model-name", kModel}));
      urls.push_back(sims_.back() ? Url(*sims_.back()) : "http://127.0.0.1:1");
    }
    gateway_ = LaunchKinference({"gateway", "--config", WriteConfig("gateway", urls)});
  }
  static void TearDownTestSuite() {
    gateway_.reset();
    sims_.clear();
  }
  void SetUp() override {
    for (const auto& s : sims_) ASSERT_TRUE(s) << "engine-sim did not start";
    ASSERT_TRUE(gateway_) << "gateway did not start";
  }

  static http::Response Call(uint16_t port, std::string method, std::string target,
                             std::string body = {}, http::Headers headers = {}) {
    http::ClientRequest r;
    r.method = std::move(method);
    r.port = port;
    r.target = std::move(target);
    r.body = std::move(body);
    r.headers = std::move(headers);
    r.header_timeout_s = 60;  // hang guard only
    auto res = http::FetchSync(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : http::Response{};
  }
  static http::Response Chat(const std::string& body, http::Headers headers = {}) {
    return Call(gateway_->port(), "POST", "/v1/chat/completions", body, std::move(headers));
  }
  static double RunningOnSims() {
    double sum = 0;
    for (const auto& s : sims_) {
      auto snap = routing::ParsePrometheusText(Call(s->port(), "GET", "/metrics").body);
      EXPECT_TRUE(snap.ok());
      if (snap.ok()) sum += snap->num_requests_running.value_or(0);
    }
    return sum;
  }

  static inline std::vector<std::unique_ptr<ChildProcess>> sims_;
  static inline std::unique_ptr<ChildProcess> gateway_;
};

TEST_F(GatewayIntegrationTest, StreamingFramingAndHeaders) {
  auto r = Chat(ChatBody("say something", true, 8));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.headers.Find("x-kinference-endpoint").empty());
  EXPECT_EQ(r.headers.Find("x-kinference-strategy"), "predicted-ttft");
  EXPECT_FALSE(r.headers.Find("x-kinference-predicted-ttft-ms").empty());
  auto events = SseEvents(r.body);
  ASSERT_GE(events.size(), 3u) << r.body;
  EXPECT_EQ(json::parse(events.front()).at("choices").at(0).at("delta").at("role").as_string(),
            "assistant");
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(r.body.find("\"prompt_tokens\""), std::string::npos) << "usage not asked for";

  auto with_usage = Chat(ChatBody("say something", true, 8,
                                  R"("ignore_eos":true,"stream_options":{"include_usage":true})"));
  auto ev = SseEvents(with_usage.body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  auto usage = json::parse(ev[ev.size() - 2]).as_object();
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_GT(usage.at("usage").at("prompt_tokens").as_int64(), 0);
  EXPECT_EQ(usage.at("usage").at("completion_tokens").as_int64(), 8);
}

TEST_F(GatewayIntegrationTest, RepeatedLongPromptHitsSameEndpointAndItsCache) {
  std::string prompt = SyntheticText(/*seed=*/4242, 2000);
  auto first = Chat(ChatBody(prompt, false, 4));
  ASSERT_EQ(first.status, 200) << first.body;
  auto second = Chat(ChatBody(prompt, false, 4));
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(first.headers.Find("x-kinference-endpoint"),
            second.headers.Find("x-kinference-endpoint"));
  auto usage = json::parse(second.body).at("usage").as_object();
  int64_t prompt_tokens = usage.at("prompt_tokens").as_int64();
  int64_t cached = usage.at("prompt_tokens_details").at("cached_tokens").as_int64();
  EXPECT_GT(prompt_tokens, 2000);
  EXPECT_GT(2 * cached, prompt_tokens);
  std::string metrics = Call(gateway_->port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("kinference_cached_tokens_total{tenant=\"default\",model=\"test-model\"}"),
            std::string::npos);
}

TEST_F(GatewayIntegrationTest, ClientDisconnectCancelsUpstream) {
  std::string body = ChatBody("tell a long story", true, 4000, R"("ignore_eos":true)");
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket s(io);
    s.connect({boost::asio::ip::make_address("127.0.0.1"), gateway_->port()});
    std::string req =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
        "application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::asio::write(s, boost::asio::buffer(req));
    std::string got;
    char buf[4096];
    boost::system::error_code ec;
    while (got.find("\"content\":\" ") == std::string::npos && !ec) {
      size_t n = s.read_some(boost::asio::buffer(buf), ec);
      got.append(buf, n);
    }
    ASSERT_FALSE(ec) << got;
    EXPECT_EQ(RunningOnSims(), 1);
  }  // the client goes away mid-stream
  double running = 1;
  for (int i = 0; i < 200 && running > 0; ++i) {  // hang guard, not a timing bound
    running = RunningOnSims();
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(running, 0);
}

// A conversation's next turn re-sends the assistant's reply, which vLLM still caches on
// the endpoint that generated it; the gateway learns the reply's blocks into that
// endpoint's prefix index (Router::OnCompletionText). First turns are spread with
// round-robin and are shorter than one 128-character block, so under `prefix` the only
// thing that can draw a second turn back is the learned reply (without it every
// endpoint matches nothing and the second turns do not follow their first turns).
TEST_F(GatewayIntegrationTest, SecondTurnFollowsTheReplyItsEndpointCached) {
  http::Headers round_robin;
  round_robin.Add("x-kinference-strategy", "round-robin");
  http::Headers prefix;
  prefix.Add("x-kinference-strategy", "prefix");
  for (int conv = 0; conv < 4; ++conv) {
    const std::string question = "conversation " + std::to_string(conv) + ": tell me more";
    const bool stream = conv % 2 == 1;  // the reply is learned from both response forms
    http::Response first =
        Chat(ChatBody(question, stream, 128, R"("ignore_eos":true)"), round_robin);
    ASSERT_EQ(first.status, 200) << first.body;
    std::string reply;
    if (stream) {
      for (const auto& ev : SseEvents(first.body)) {
        if (ev == "[DONE]") continue;
        auto v = json::parse(ev).as_object();
        for (const auto& c : v["choices"].as_array())
          if (const auto* d = c.as_object().if_contains("delta"))
            if (const auto* t = d->as_object().if_contains("content"); t && t->is_string())
              reply += std::string(t->get_string());
      }
    } else {
      reply = std::string(
          json::parse(first.body).at("choices").at(0).at("message").at("content").as_string());
    }
    ASSERT_GT(reply.size(), 300u) << "the reply must span several 128-character blocks";
    json::array messages{json::object{{"role", "user"}, {"content", question}},
                         json::object{{"role", "assistant"}, {"content", reply}},
                         json::object{{"role", "user"}, {"content", "and then?"}}};
    json::object body{{"model", kModel}, {"messages", messages}, {"max_tokens", 4}};
    http::Response second = Chat(json::serialize(body), prefix);
    ASSERT_EQ(second.status, 200) << second.body;
    EXPECT_EQ(second.headers.Find("x-kinference-endpoint"),
              first.headers.Find("x-kinference-endpoint"))
        << "conversation " << conv;
  }
}

TEST_F(GatewayIntegrationTest, ErrorShapes) {
  auto bad = Chat("{\"model\": [");
  EXPECT_EQ(bad.status, 400);
  EXPECT_TRUE(json::parse(bad.body).at("error").is_object());
  auto unknown = Chat(R"({"model":"no-such-model","messages":[]})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body).at("error").at("param").as_string(), "model");
  auto big = Chat(ChatBody(std::string(2 << 20, 'x'), false, 4));
  EXPECT_EQ(big.status, 413);
  auto models = json::parse(Call(gateway_->port(), "GET", "/v1/models").body);
  EXPECT_EQ(models.at("data").at(0).at("id").as_string(), kModel);
}

TEST_F(GatewayIntegrationTest, DeadEndpointRequestsStillSucceed) {
  uint16_t dead;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    dead = a.local_endpoint().port();
  }
  auto gw =
      LaunchKinference({"gateway", "--config",
                        WriteConfig("gateway-dead", {"http://127.0.0.1:" + std::to_string(dead),
                                                     Url(*sims_[0]), Url(*sims_[1])})});
  ASSERT_TRUE(gw);
  http::Headers rr{{{"x-kinference-strategy", "round-robin"}}};
  for (int i = 0; i < 6; ++i) {
    auto r = Call(gw->port(), "POST", "/v1/chat/completions", ChatBody("hi", i % 2 == 0, 4), rr);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.headers.Find("x-kinference-endpoint"), "sim/0");
  }
}

// Runs `kinference gateway --config <yaml written from text>`, returns exit code and
// combined output.
std::pair<int, std::string> RunGatewayWithConfig(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid());
  std::ofstream(dir + ".yaml") << text;
  std::string cmd = kinference::testing::KinferenceBin() + " gateway --config " + dir + ".yaml > " +
                    dir + ".log 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(dir + ".log");
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

TEST(GatewayCli, ConfigErrorsExitWithTheFieldNamed) {
  auto [rc, out] = RunGatewayWithConfig("no-pools", "listen: {port: 0}\npools: []\n");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("pools"), std::string::npos) << out;
  auto [rc2, out2] = RunGatewayWithConfig(
      "bad-strategy",
      "strategy: fastest\npools: [{name: p, model: m, endpoints: ['http://127.0.0.1:1']}]\n");
  EXPECT_EQ(rc2, 2);
  EXPECT_NE(out2.find("strategy: unknown strategy 'fastest'"), std::string::npos) << out2;
  auto [rc3, out3] = RunGatewayWithConfig(
      "bad-url", "pools: [{name: p, model: m, endpoints: ['localhost:8000']}]\n");
  EXPECT_EQ(rc3, 2);
  EXPECT_NE(out3.find("pools[0].endpoints[0]"), std::string::npos) << out3;
}

}  // namespace
}  // namespace kinference::gateway
