// The gateway under pressure and against misbehaving upstreams (docs/reliability.md):
// admission control (queue, 429 / 529 + Retry-After in each API's shape), backpressure on slow
// readers, passive health and stale metrics, upstream error hygiene, counting a retried
// request once, liveness and readiness, and the inputs the fronts refuse.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fake_upstream.h"
#include "fault_upstream.h"
#include "gateway/gateway.h"
#include "gateway_harness.h"
#include "http/client.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using testing::DeadPort;
using testing::Eventually;
using testing::FakeMode;
using testing::FakeUpstream;
using testing::Fault;
using testing::FaultUpstream;
using testing::kChat;
using testing::kMessages;
using testing::kStreamChat;

std::string Url(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

class ReliabilityTest : public testing::GatewayHarness {
 protected:
  FakeUpstream& AddFake(FakeMode mode) {
    fakes_.push_back(std::make_unique<FakeUpstream>(io(), mode));
    FakeUpstream* f = fakes_.back().get();
    OnStop([f] { f->Stop(); });
    return *f;
  }
  FaultUpstream& AddFault(Fault fault) {
    faults_.push_back(std::make_unique<FaultUpstream>(io(), fault));
    FaultUpstream* f = faults_.back().get();
    OnStop([f] { f->Stop(); });
    return *f;
  }
  GatewayConfig Config(const std::vector<std::string>& urls) {
    GatewayConfig c;
    c.scrape_interval_s = 0.2;
    PoolConfig pool{"p", "m", {}};
    for (const auto& u : urls) pool.endpoints.push_back(ParseEndpointUrl(u, "test"));
    c.pools.push_back(pool);
    return c;
  }
  void FinishHeld(FakeUpstream& f) {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      f.FinishHeld();
      done.set_value();
    });
    done.get_future().wait();
  }
  std::future<http::Response> PostAsync(std::string body,
                                        std::string path = "/v1/chat/completions") {
    return std::async(std::launch::async, [this, body, path] { return Post(body, {}, path); });
  }

  // Three OpenAI requests and one /v1/messages to `up`, which answers `status` without an
  // API error body (below).
  void ExpectNonApi4xxReplaced(const FaultUpstream& up, int status, const std::string& type);

  std::vector<std::unique_ptr<FakeUpstream>> fakes_;
  std::vector<std::unique_ptr<FaultUpstream>> faults_;
};

// One slot, one queue place: the second request waits and is served when the first ends;
// the third is refused at once with Retry-After in each API's shape: 429 rate_limit_error
// on the OpenAI fronts, Anthropic's overload (529 overloaded_error) on /v1/messages.
TEST_F(ReliabilityTest, FullPoolQueuesThenRefusesWithRetryAfterInEachApisShape) {
  auto& hang = AddFake(FakeMode::kHang);
  GatewayConfig c = Config({Url(hang.port())});
  c.pools[0].max_in_flight = 1;
  c.admission.max_queue = 1;
  c.admission.queue_timeout_s = 600;
  Start(c);
  auto first = PostAsync(kStreamChat);
  ASSERT_TRUE(Eventually([&] { return hang.requests() == 1; }));
  auto second = PostAsync(kStreamChat);
  ASSERT_TRUE(Eventually([&] { return Metric("kinference_admission_waiting{pool=\"p\"}") == 1; }));
  EXPECT_EQ(hang.requests(), 1);  // waiting in the gateway, not in the engine

  auto refused = Post(kChat);
  EXPECT_EQ(refused.status, 429);
  EXPECT_FALSE(refused.headers.Find("Retry-After").empty());
  EXPECT_GE(std::stoi(std::string(refused.headers.Find("Retry-After"))), 1);
  EXPECT_EQ(json::parse(refused.body).at("error").at("type").as_string(), "rate_limit_error");

  auto refused_anthropic = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(refused_anthropic.status, 529);
  EXPECT_EQ(refused_anthropic.headers.Find("Retry-After"), refused.headers.Find("Retry-After"));
  auto body = json::parse(refused_anthropic.body);
  EXPECT_EQ(body.at("type").as_string(), "error");
  EXPECT_EQ(body.at("error").at("type").as_string(), "overloaded_error");
  EXPECT_NE(body.at("error").at("message").as_string().find("at capacity"), std::string::npos);

  FinishHeld(hang);  // the first ends; the second is dispatched and held
  EXPECT_EQ(first.get().status, 200);
  ASSERT_TRUE(Eventually([&] { return hang.requests() == 2; }));
  FinishHeld(hang);
  EXPECT_EQ(second.get().status, 200);
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"none\",strategy=\"predicted-ttft\","
                   "outcome=\"overloaded\"}"),
            2);
  EXPECT_EQ(Metric("kinference_admission_refused_total{pool=\"p\",reason=\"queue_full\"}"), 2);
  EXPECT_EQ(Metric("kinference_admission_queued_total{pool=\"p\"}"), 1);
}

TEST_F(ReliabilityTest, RequestWaitingPastTheQueueTimeoutGets429) {
  auto& hang = AddFake(FakeMode::kHang);
  GatewayConfig c = Config({Url(hang.port())});
  c.pools[0].max_in_flight = 1;
  c.admission.queue_timeout_s = 0.3;
  Start(c);
  auto first = PostAsync(kStreamChat);
  ASSERT_TRUE(Eventually([&] { return hang.requests() == 1; }));
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 429);
  EXPECT_FALSE(r.headers.Find("Retry-After").empty());
  EXPECT_EQ(Metric("kinference_admission_refused_total{pool=\"p\",reason=\"timeout\"}"), 1);
  EXPECT_EQ(hang.requests(), 1);
  FinishHeld(hang);
  EXPECT_EQ(first.get().status, 200);
}

// A client that leaves while waiting in the admission queue counts as cancelled with
// endpoint "none", the label every request that reached no endpoint has (it was
// endpoint="" and strategy="", a series of its own).
TEST_F(ReliabilityTest, ClientLeavingTheQueueCountsWithEndpointNone) {
  auto& hang = AddFake(FakeMode::kHang);
  GatewayConfig c = Config({Url(hang.port())});
  c.pools[0].max_in_flight = 1;
  c.admission.queue_timeout_s = 600;
  Start(c);
  auto first = PostAsync(kStreamChat);
  ASSERT_TRUE(Eventually([&] { return hang.requests() == 1; }));
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket s(io);
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
    std::string req =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(kChat.size()) + "\r\n\r\n" + kChat;
    boost::asio::write(s, boost::asio::buffer(req));
    ASSERT_TRUE(
        Eventually([&] { return Metric("kinference_admission_waiting{pool=\"p\"}") == 1; }));
  }  // the waiting client leaves
  ASSERT_TRUE(Eventually([&] { return Metric("kinference_admission_waiting{pool=\"p\"}") == 0; }));
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"none\",strategy=\"predicted-ttft\","
                   "outcome=\"cancelled\"}"),
            1);
  EXPECT_EQ(Call("GET", "/metrics").body.find("endpoint=\"\""), std::string::npos);
  FinishHeld(hang);
  EXPECT_EQ(first.get().status, 200);
}

// A client that stops reading: the upstream read pauses (the upstream sends a bounded
// amount, not the whole generation), and after the stall timeout the client is closed and
// the upstream request cancelled.
TEST_F(ReliabilityTest, StalledReaderPausesThenCancelsUpstream) {
  auto& flood = AddFault(Fault::kFlood);
  GatewayConfig c = Config({Url(flood.port())});
  c.backpressure.client_buffer_bytes = 64 * 1024;
  c.backpressure.client_stall_timeout_s = 1;
  Start(c);
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
  boost::asio::socket_base::receive_buffer_size small(16 * 1024);
  s.set_option(small);
  std::string req =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(kStreamChat.size()) + "\r\n\r\n" + kStreamChat;
  boost::asio::write(s, boost::asio::buffer(req));
  // The client reads nothing.
  ASSERT_TRUE(Eventually([&] { return Metric("\nkinference_client_stalls_total") == 1; }));
  ASSERT_TRUE(Eventually([&] { return flood.closed() == 1; }));  // upstream call cancelled
  // Bounded by the socket buffers on both sides plus client_buffer_bytes, not by the
  // generation (1 GiB).
  EXPECT_LT(flood.bytes_sent(), 64LL << 20);
  // The client's connection was closed: reading ends (after what was buffered).
  boost::system::error_code ec;
  std::vector<char> buf(1 << 16);
  size_t total = 0;
  while (!ec) total += s.read_some(boost::asio::buffer(buf), ec);
  EXPECT_TRUE(ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset)
      << ec.message();
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"p/0\",strategy=\"predicted-ttft\","
                   "outcome=\"cancelled\"}"),
            1);
}

// A dead endpoint is ejected at its first failure (or its first refused scrape): every
// request succeeds on the other, and each counts once in kinference_requests_total.
TEST_F(ReliabilityTest, DeadEndpointIsEjectedAndRetriedRequestsCountOnce) {
  auto& fake = AddFake(FakeMode::kOk);
  Start(Config({Url(DeadPort()), Url(fake.port())}));
  http::Headers rr{{{"x-kinference-strategy", "round-robin"}}};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Post(kStreamChat, rr).status, 200);
  EXPECT_EQ(fake.requests(), 6);
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"p/1\",strategy=\"round-robin\","
                   "outcome=\"success\"}"),
            6);
  std::string text = Call("GET", "/metrics").body;
  EXPECT_EQ(text.find("outcome=\"retried\""), std::string::npos);
  EXPECT_EQ(text.find("kinference_requests_total{endpoint=\"p/0\""), std::string::npos);
  EXPECT_GE(Metric("kinference_endpoint_ejections_total{endpoint=\"p/0\"}"), 1);
}

TEST_F(ReliabilityTest, RetriedServerErrorCountsOnceAndAsARetry) {
  auto& failing = AddFake(FakeMode::kFail500);
  auto& fake = AddFake(FakeMode::kOk);
  Start(Config({Url(failing.port()), Url(fake.port())}));
  http::Headers rr{{{"x-kinference-strategy", "round-robin"}}};
  int sent = 0;
  while (failing.requests() == 0 && sent < 4) {  // round-robin reaches p/0 within two
    auto r = Post(kStreamChat, rr);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "p/1");
    ++sent;
  }
  EXPECT_EQ(failing.requests(), 1);
  EXPECT_EQ(Metric("kinference_upstream_retries_total{endpoint=\"p/0\"}"), 1);
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"p/1\",strategy=\"round-robin\","
                   "outcome=\"success\"}"),
            sent);
  EXPECT_EQ(Call("GET", "/metrics").body.find("kinference_requests_total{endpoint=\"p/0\""),
            std::string::npos);
  EXPECT_EQ(Metric("kinference_endpoint_ejections_total{endpoint=\"p/0\"}"), 1);
}

// /metrics failing only makes the metrics stale: the endpoint keeps serving.
TEST_F(ReliabilityTest, FailingMetricsMarkStaleButKeepRouting) {
  auto& sick = AddFault(Fault::kMetricsFail);
  Start(Config({Url(sick.port())}));
  ASSERT_TRUE(Eventually(
      [&] { return Metric("kinference_endpoint_metrics_stale{endpoint=\"p/0\"}") == 1; }));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Post(kChat).status, 200);
  EXPECT_EQ(sick.requests(), 3);
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"p/0\"}"), 1);
  EXPECT_EQ(Call("GET", "/ready").status, 200);
}

// An upstream 5xx body never reaches the client: the gateway's own message with the
// status class and the request id; no key, no internal address. (One request per gateway:
// the 5xx ejects the only endpoint, so the retry finds none left: 503, Anthropic 529.)
void ExpectOwnMessage(const http::Response& r) {
  EXPECT_GE(r.status, 500) << r.body;
  EXPECT_EQ(r.body.find(testing::kLeakedKey), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find(testing::kLeakedAddress), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("127.0.0.1"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("5xx"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("kgw-"), std::string::npos) << r.body;  // the request id
}

TEST_F(ReliabilityTest, UpstreamErrorBodyIsReplacedNotRelayed) {
  auto& leaky = AddFault(Fault::kLeaky500);
  Start(Config({Url(leaky.port())}));
  auto r = Post(kChat);
  ExpectOwnMessage(r);
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(json::parse(r.body).at("error").at("message").is_string());
}

TEST_F(ReliabilityTest, UpstreamErrorBodyIsReplacedInAnthropicShape) {
  auto& leaky = AddFault(Fault::kLeaky500);
  Start(Config({Url(leaky.port())}));
  auto r = Post(kMessages, {}, "/v1/messages");
  ExpectOwnMessage(r);
  EXPECT_EQ(r.status, 529);
  EXPECT_EQ(json::parse(r.body).at("type").as_string(), "error");
}

// An upstream 4xx whose body is no API error (a proxy's HTML page or its own JSON in
// front of vLLM, a bare text 429) keeps its status; the client gets the API's own error
// shape with the gateway's words, never the proxy's page or the address it names.
void ReliabilityTest::ExpectNonApi4xxReplaced(const FaultUpstream& up, int status,
                                              const std::string& type) {
  const std::string upstream_status = "upstream status " + std::to_string(status);
  const std::vector<std::pair<std::string, std::string>> openai = {
      {"/v1/chat/completions", kChat},
      {"/v1/chat/completions", kStreamChat},
      {"/v1/completions", R"({"model":"m","prompt":"hello"})"}};
  for (const auto& [path, body] : openai) {
    auto r = Post(body, {}, path);
    EXPECT_EQ(r.status, status) << body;
    EXPECT_EQ(r.headers.Find("content-type"), "application/json") << body;
    EXPECT_EQ(r.body.find("10.1.2.3"), std::string::npos) << r.body;
    const json::value v = json::parse(r.body);
    const auto& error = v.at("error");
    EXPECT_NE(error.at("message").as_string().find(upstream_status), std::string::npos) << r.body;
    EXPECT_EQ(error.at("type").as_string(), type) << r.body;
    EXPECT_EQ(error.at("code").as_int64(), status);
  }
  auto m = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(m.status, status);
  EXPECT_EQ(m.body.find("10.1.2.3"), std::string::npos) << m.body;
  EXPECT_EQ(json::parse(m.body).at("type").as_string(), "error") << m.body;
  EXPECT_EQ(json::parse(m.body).at("error").at("type").as_string(), type) << m.body;
  EXPECT_NE(json::parse(m.body).at("error").at("message").as_string().find(upstream_status),
            std::string::npos)
      << m.body;
  EXPECT_EQ(up.requests(), 4);  // a 4xx is not retried
}

TEST_F(ReliabilityTest, HtmlUpstream404IsReplacedInTheApisShape) {
  auto& up = AddFault(Fault::kHtml404);
  Start(Config({Url(up.port())}));
  ExpectNonApi4xxReplaced(up, 404, "not_found_error");
}

TEST_F(ReliabilityTest, ProxyJsonUpstream404IsReplacedInTheApisShape) {
  auto& up = AddFault(Fault::kProxyJson404);
  Start(Config({Url(up.port())}));
  ExpectNonApi4xxReplaced(up, 404, "not_found_error");
}

TEST_F(ReliabilityTest, TextUpstream429IsReplacedInTheApisShape) {
  auto& up = AddFault(Fault::kText429);
  Start(Config({Url(up.port())}));
  ExpectNonApi4xxReplaced(up, 429, "rate_limit_error");
}

TEST_F(ReliabilityTest, ConnectFailureMessageNamesNoAddress) {
  Start(Config({Url(DeadPort())}));
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body.find("127.0.0.1"), std::string::npos) << r.body;
  EXPECT_FALSE(r.headers.Find("Retry-After").empty());
}

// Liveness is the process; readiness is whether any model can be served.
TEST_F(ReliabilityTest, HealthIsLivenessReadyFollowsEndpoints) {
  Start(Config({Url(DeadPort())}));
  EXPECT_EQ(Call("GET", "/health").status, 200);
  std::string ready;
  ASSERT_TRUE(Eventually([&] {
    auto r = Call("GET", "/ready");
    ready = r.body;
    return r.status == 503;
  }));
  auto r = json::parse(ready);
  EXPECT_EQ(r.at("status").as_string(), "unavailable");
  EXPECT_EQ(r.at("models").at("m").at("healthy_endpoints").as_int64(), 0);
}

TEST_F(ReliabilityTest, ReadyWhenAModelHasAHealthyEndpoint) {
  auto& fake = AddFake(FakeMode::kOk);
  Start(Config({Url(fake.port())}));
  EXPECT_EQ(Call("GET", "/ready").status, 200);
}

TEST_F(ReliabilityTest, BadInputsGetMessagesNamingTheProblem) {
  auto& fake = AddFake(FakeMode::kOk);
  Start(Config({Url(fake.port())}));
  auto expect_400 = [&](const std::string& body, const std::string& needle,
                        const std::string& path = "/v1/chat/completions", http::Headers h = {}) {
    auto r = Post(body, std::move(h), path);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.body.find(needle), std::string::npos) << r.body;
    return r;
  };
  expect_400(R"({"model":"m","temperature":9,"messages":[{"role":"user","content":"x"}]})",
             "'temperature' must be between 0 and 2");
  expect_400(R"({"model":"m","messages":[{"role":"wizard","content":"x"}]})",
             "messages[0].role 'wizard'");
  expect_400(R"({"model":"m","n":0,"messages":[{"role":"user","content":"x"}]})",
             "'n' must be at least 1");
  {
    http::ClientRequest req;
    req.method = "POST";
    req.port = port_;
    req.target = "/v1/chat/completions";
    req.body = kChat;
    req.content_type = "text/plain";
    req.header_timeout_s = 30;
    auto r = http::FetchSync(req);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("Content-Type must be application/json, got 'text/plain'"),
              std::string::npos)
        << r->body;
  }
  auto m = expect_400(R"({"model":42,"max_tokens":5,"messages":[{"role":"user","content":"x"}]})",
                      "model: Input should be a valid string", "/v1/messages");
  EXPECT_EQ(json::parse(m.body).at("type").as_string(), "error");
  expect_400(
      R"({"model":"m","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"x"}]})",
      "temperature: Input should be between 0 and 1", "/v1/messages");
  EXPECT_EQ(fake.requests(), 0);
}

TEST_F(ReliabilityTest, ServerLevelErrorsOnMessagesUseAnthropicShape) {
  auto& fake = AddFake(FakeMode::kOk);
  GatewayConfig c = Config({Url(fake.port())});
  c.max_body_bytes = 64;
  Start(c);
  auto r = Post(std::string(1000, ' ') + kMessages, {}, "/v1/messages");
  EXPECT_EQ(r.status, 413);
  auto body = json::parse(r.body);
  EXPECT_EQ(body.at("type").as_string(), "error");
  EXPECT_TRUE(body.at("error").at("type").is_string());
  auto o = Post(std::string(1000, ' ') + kChat);
  EXPECT_EQ(o.status, 413);
  EXPECT_TRUE(json::parse(o.body).at("error").at("message").is_string());
}

}  // namespace
}  // namespace kinference::gateway
