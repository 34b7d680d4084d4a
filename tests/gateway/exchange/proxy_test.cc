// The gateway's request path against in-process fake upstreams (one io_context thread,
// as in production): framing, headers, usage, retries, cancellation and error shapes.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fake_upstream.h"
#include "gateway/gateway.h"
#include "gateway_harness.h"
#include "http/client.h"
#include "testing/wire.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::RawExchange;
using kinference::testing::SseEvents;
using testing::BreakingUpstream;
using testing::DeadPort;
using testing::FakeMode;
using testing::FakeUpstream;
using testing::kChat;
using testing::kStreamChat;

const std::string kStreamChatUsage =
    R"({"model":"m","stream":true,"stream_options":{"include_usage":true},)"
    R"("messages":[{"role":"user","content":"hello"}]})";

class ProxyTest : public testing::GatewayHarness {
 protected:
  FakeUpstream& AddFake(FakeMode mode) {
    fakes_.push_back(std::make_unique<FakeUpstream>(io(), mode));
    FakeUpstream* fake = fakes_.back().get();
    OnStop([fake] { fake->Stop(); });
    return *fake;
  }
  static std::string Url(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

  // Starts the gateway with one pool "p" serving model "m" on `urls` (and a pool "q"
  // serving "m2" on the first of them).
  void StartGateway(std::vector<std::string> urls, size_t max_body_bytes = 1 << 20) {
    GatewayConfig c;
    c.max_body_bytes = max_body_bytes;
    c.scrape_interval_s = 0.2;
    PoolConfig pool{"p", "m", {}};
    for (size_t i = 0; i < urls.size(); ++i)
      pool.endpoints.push_back(ParseEndpointUrl(urls[i], "test"));
    c.pools.push_back(pool);
    c.pools.push_back(PoolConfig{"q", "m2", {ParseEndpointUrl(urls[0], "test")}});
    Start(c);
  }

  // Starts a gateway on one upstream that never answers, runs `send` (a request) while
  // draining with a 0.1 s grace once the upstream holds it, and returns its response
  // after the drain finished.
  http::Response SendThenDrainWhileUpstreamHangs(const std::function<http::Response()>& send) {
    auto& hang = AddFake(FakeMode::kHang);
    StartGateway({Url(hang.port())});
    auto response = std::async(std::launch::async, send);
    for (int i = 0; i < 2000 && hang.requests() == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // hang guard, not a bound
    EXPECT_EQ(hang.requests(), 1);
    std::promise<void> drained;
    boost::asio::post(io_, [&] { gateway_->Drain(0.1, [&] { drained.set_value(); }); });
    auto r = response.get();
    drained.get_future().wait();
    return r;
  }

  std::vector<std::unique_ptr<FakeUpstream>> fakes_;
};

TEST_F(ProxyTest, StreamingFramingWithoutUsageWhenNotAsked) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  auto r = Post(kStreamChat);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.Find("content-type"), "text/event-stream");
  auto events = SseEvents(r.body);
  ASSERT_EQ(events.size(), 6u) << r.body;  // role, 3 content, finish, [DONE]
  EXPECT_NE(events.front().find("\"role\":\"assistant\""), std::string::npos);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(r.body.find("\"usage\""), std::string::npos);
  // Upstream was still asked for usage, and the gateway counted it.
  ASSERT_EQ(fake.bodies().size(), 1u);
  EXPECT_TRUE(json::parse(fake.bodies()[0]).at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(Metric("kinference_cached_tokens_total{tenant=\"default\",model=\"m\"}"), 8);
  EXPECT_EQ(Metric("kinference_time_to_first_token_seconds_count{model=\"m\"}"), 1);
  EXPECT_EQ(Metric("kinference_inter_token_latency_seconds_count{model=\"m\"}"), 2);
}

TEST_F(ProxyTest, StreamingUsageForwardedWhenAsked) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  auto r = Post(kStreamChatUsage);
  auto events = SseEvents(r.body);
  ASSERT_EQ(events.size(), 7u) << r.body;
  auto usage = json::parse(events[5]).as_object();
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(usage.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64(), 8);
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST_F(ProxyTest, RoutedResponsesCarryRoutingHeaders) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  for (const auto& body : {kChat, kStreamChat}) {
    auto r = Post(body, http::Headers{{{"x-kinference-strategy", "round-robin"}}});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "p/0");
    EXPECT_EQ(r.headers.Find("x-kinference-strategy"), "round-robin");
    EXPECT_FALSE(r.headers.Find("x-kinference-predicted-ttft-ms").empty());
  }
  auto plain = Post(kChat);
  EXPECT_EQ(plain.headers.Find("x-kinference-strategy"), "predicted-ttft");
  EXPECT_EQ(json::parse(plain.body).at("usage").at("prompt_tokens").as_int64(), 12);
  EXPECT_EQ(Metric("kinference_prompt_tokens_total{tenant=\"default\",model=\"m\"}"), 36);
}

TEST_F(ProxyTest, CompletionsRoute) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  auto r = Call("POST", "/v1/completions", R"({"model":"m","prompt":"once"})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(fake.requests(), 1);
}

TEST_F(ProxyTest, ErrorShapes) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())}, 4096);
  auto bad = Post("{\"model\": ");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body).at("error").at("type").as_string(), "invalid_request_error");
  auto unknown = Post(R"({"model":"nope","messages":[]})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body).at("error").at("param").as_string(), "model");
  auto missing = Post(R"({"messages":[]})");
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(json::parse(missing.body).at("error").at("param").as_string(), "model");
  auto strategy = Post(kChat, http::Headers{{{"x-kinference-strategy", "bogus"}}});
  EXPECT_EQ(strategy.status, 400);
  EXPECT_TRUE(json::parse(strategy.body).as_object().contains("error"));
  auto big = Post(R"({"model":"m","messages":[{"role":"user","content":")" +
                  std::string(8000, 'x') + "\"}]}");
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(fake.requests(), 0);
}

TEST_F(ProxyTest, ModelsAndHealth) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  auto models = json::parse(Call("GET", "/v1/models").body).as_object();
  EXPECT_EQ(models.at("object").as_string(), "list");
  ASSERT_EQ(models.at("data").as_array().size(), 2u);
  EXPECT_EQ(models.at("data").at(0).at("id").as_string(), "m");
  EXPECT_EQ(models.at("data").at(1).at("id").as_string(), "m2");
  EXPECT_EQ(models.at("data").at(0).at("object").as_string(), "model");
  EXPECT_EQ(Call("GET", "/health").status, 200);
}

TEST_F(ProxyTest, DeadEndpointIsRetriedOnAnother) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(DeadPort()), Url(fake.port())});
  http::Headers rr{{{"x-kinference-strategy", "round-robin"}}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Post(kStreamChat, rr).status, 200);
    EXPECT_EQ(Post(kChat, rr).status, 200);
  }
  EXPECT_EQ(fake.requests(), 8);
  // Passive health ejected p/0 at its first failure (or refused scrape); each request
  // counts once, by its final outcome.
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"p/1\",strategy=\"round-robin\","
                   "outcome=\"success\"}"),
            8);
  EXPECT_GE(Metric("kinference_endpoint_ejections_total{endpoint=\"p/0\"}"), 1);
}

TEST_F(ProxyTest, ServerErrorBeforeBodyIsRetried) {
  auto& failing = AddFake(FakeMode::kFail500);
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(failing.port()), Url(fake.port())});
  http::Headers rr{{{"x-kinference-strategy", "round-robin"}}};
  for (int i = 0; i < 4; ++i) {
    auto r = Post(kStreamChat, rr);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "p/1");
  }
  EXPECT_GE(failing.requests(), 1);
  EXPECT_EQ(fake.requests(), 4);
}

TEST_F(ProxyTest, NoLiveEndpointGivesOpenAiError) {
  StartGateway({Url(DeadPort())});
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(json::parse(r.body).at("error").is_object());
}

TEST_F(ProxyTest, FailureAfterFirstByteEndsStreamWithErrorEvent) {
  BreakingUpstream breaking;
  StartGateway({Url(breaking.port())});
  auto r = Post(kStreamChat);
  EXPECT_EQ(r.status, 200);
  auto events = SseEvents(r.body);
  ASSERT_EQ(events.size(), 2u) << r.body;
  EXPECT_NE(events[0].find("\"content\":\" a\""), std::string::npos);
  EXPECT_TRUE(json::parse(events[1]).at("error").is_object());
}

// vLLM sends its 200 + SSE head at once and data only at the first token: a replica
// dying in between is retried, and the client sees one clean stream from the other.
TEST_F(ProxyTest, StreamDroppedBeforeFirstBodyByteIsRetried) {
  BreakingUpstream headless(/*send_event=*/false);
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(headless.port()), Url(fake.port())});
  http::Headers rr{{{"x-kinference-strategy", "round-robin"}}};
  for (int i = 0; i < 2; ++i) {
    auto r = Post(kStreamChat, rr);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "p/1");
    auto events = SseEvents(r.body);
    ASSERT_EQ(events.size(), 6u) << r.body;
    EXPECT_EQ(events.back(), "[DONE]");
    for (const auto& e : events) EXPECT_EQ(e.find("\"error\""), std::string::npos) << e;
  }
  EXPECT_GE(headless.posts(), 1);
  EXPECT_EQ(fake.requests(), 2);
  EXPECT_GE(Metric("kinference_upstream_retries_total{endpoint=\"p/0\"}"), 1);
}

TEST_F(ProxyTest, ClientDisconnectCancelsUpstream) {
  auto& hang = AddFake(FakeMode::kHang);
  StartGateway({Url(hang.port())});
  // The connection is closed once the first token has come (RawExchange returns).
  std::string got = RawExchange(port_,
                                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                "application/json\r\nContent-Length: " +
                                    std::to_string(kStreamChat.size()) + "\r\n\r\n" + kStreamChat,
                                "\" a\"");
  ASSERT_NE(got.find("\" a\""), std::string::npos) << got;
  for (int i = 0; i < 2000 && hang.closed() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // hang guard, not a bound
  EXPECT_EQ(hang.closed(), 1);
  double cancelled = 0;
  for (int i = 0; i < 500 && cancelled == 0; ++i) {
    cancelled = Metric(
        "kinference_requests_total{endpoint=\"p/0\",strategy=\"predicted-ttft\","
        "outcome=\"cancelled\"}");
    if (cancelled == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(cancelled, 1);
}

// Reads from `s` until `done(got)` or an error (EOF included); returns what it read.
template <typename Done>
std::string ReadUntil(boost::asio::ip::tcp::socket& s, Done done) {
  std::string got;
  char buf[4096];
  boost::system::error_code ec;
  while (!done(got) && !ec) {
    size_t n = s.read_some(boost::asio::buffer(buf), ec);
    got.append(buf, n);
  }
  return got;
}

std::string RawRequest(const std::string& method, const std::string& path,
                       const std::string& body = {}) {
  return method + " " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// SIGTERM's path: the in-flight stream finishes with [DONE], new connections are refused,
// a new request on a kept-alive connection gets 503 + Connection: close, then `done`.
TEST_F(ProxyTest, DrainFinishesInFlightStreamAndRefusesNewWork) {
  auto& hang = AddFake(FakeMode::kHang);
  StartGateway({Url(hang.port())});
  namespace asio = boost::asio;
  asio::io_context client_io;
  const asio::ip::tcp::endpoint gw{asio::ip::make_address("127.0.0.1"), port_};
  asio::ip::tcp::socket kept(client_io);  // a keep-alive connection from before the drain
  kept.connect(gw);
  asio::write(kept, asio::buffer(RawRequest("GET", "/health")));
  std::string health = ReadUntil(kept, [](const std::string& g) {
    return g.find("\r\n\r\n") != std::string::npos && !g.empty() && g.back() == '}';
  });
  ASSERT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << health;

  auto stream = std::async(std::launch::async, [&] { return Post(kStreamChat); });
  for (int i = 0; i < 2000 && hang.requests() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // hang guard, not a bound
  ASSERT_EQ(hang.requests(), 1);

  std::promise<void> drained;
  asio::post(io_, [&] { gateway_->Drain(60, [&] { drained.set_value(); }); });
  bool refused = false;
  for (int i = 0; i < 2000 && !refused; ++i) {
    asio::ip::tcp::socket probe(client_io);
    boost::system::error_code ec;
    probe.connect(gw, ec);
    refused = ec == asio::error::connection_refused;
    if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(refused);

  asio::write(kept, asio::buffer(RawRequest("POST", "/v1/chat/completions", kStreamChat)));
  std::string refusal = ReadUntil(kept, [](const std::string&) { return false; });  // to EOF
  EXPECT_EQ(refusal.rfind("HTTP/1.1 503", 0), 0u) << refusal;
  EXPECT_NE(refusal.find("Connection: close"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("\"error\""), std::string::npos) << refusal;
  EXPECT_EQ(hang.requests(), 1);

  asio::post(io_, [&] { hang.FinishHeld(); });
  auto r = stream.get();
  EXPECT_EQ(r.status, 200);
  auto events = SseEvents(r.body);
  ASSERT_FALSE(events.empty()) << r.body;
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(r.body.find("\"error\""), std::string::npos) << r.body;
  drained.get_future().wait();
}

// The grace period runs out: the stream still in flight ends with the SSE error event.
TEST_F(ProxyTest, DrainTimeoutEndsStreamWithErrorEvent) {
  auto r = SendThenDrainWhileUpstreamHangs([&] { return Post(kStreamChat); });
  EXPECT_EQ(r.status, 200);
  auto events = SseEvents(r.body);
  ASSERT_FALSE(events.empty()) << r.body;
  EXPECT_TRUE(json::parse(events.back()).at("error").is_object()) << r.body;
}

// A non-streamed request the drain aborts: the client gets 503, and its access-log line
// says 503 (it said 200, the status of the upstream's stream head the client never saw).
TEST_F(ProxyTest, DrainAbortedWholeResponseIsLoggedWithTheStatusTheClientGot) {
  ::testing::internal::CaptureStderr();
  auto r = SendThenDrainWhileUpstreamHangs([&] { return Post(kChat); });
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.status, 503) << r.body;
  const std::string id(r.headers.Find("x-request-id"));
  ASSERT_FALSE(id.empty());
  std::string line;
  for (size_t at = log.find("request_id=" + id); at != std::string::npos;
       at = log.find("request_id=" + id, at + 1)) {
    const size_t begin = log.rfind('\n', at) + 1;
    std::string candidate = log.substr(begin, log.find('\n', at) - begin);
    if (candidate.find("[access]") != std::string::npos) line = candidate;
  }
  ASSERT_FALSE(line.empty()) << log;
  EXPECT_NE(line.find(" status=503 "), std::string::npos) << line;
  EXPECT_NE(line.find(" outcome=error "), std::string::npos) << line;
}

// Without an `accounting` section /v1/usage says so with 503, as docs/accounting.md says
// (it was 404 Not found, which reads as a wrong path).
TEST_F(ProxyTest, UsageWithoutAccountingIsUnavailableSayingWhy) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  auto r = Call("GET", "/v1/usage?group_by=tenant");
  EXPECT_EQ(r.status, 503) << r.body;
  auto error = json::parse(r.body).at("error");
  EXPECT_EQ(error.at("code"), 503) << r.body;
  EXPECT_NE(std::string(error.at("message").as_string()).find("accounting"), std::string::npos)
      << r.body;
}

// The same drain on the Anthropic front: the stream's error event says overloaded_error,
// as the 529 a non-streamed request aborted by the drain gets (api_error is for an
// upstream that failed mid-stream).
TEST_F(ProxyTest, DrainTimeoutEndsAnthropicStreamWithOverloadedError) {
  http::Headers headers;
  headers.Add("anthropic-version", "2023-06-01");
  auto r = SendThenDrainWhileUpstreamHangs([&] {
    return Post(R"({"model":"m","max_tokens":16,"stream":true,)"
                R"("messages":[{"role":"user","content":"hello"}]})",
                headers, "/v1/messages");
  });
  EXPECT_EQ(r.status, 200);
  const size_t at = r.body.rfind("event: error\ndata: ");
  ASSERT_NE(at, std::string::npos) << r.body;
  const size_t data = at + std::string("event: error\ndata: ").size();
  auto error = json::parse(r.body.substr(data, r.body.find('\n', data) - data));
  EXPECT_EQ(error.at("type"), "error") << r.body;
  EXPECT_EQ(error.at("error").at("type"), "overloaded_error") << r.body;
}

TEST_F(ProxyTest, RefusedScrapeEjectsEndpointUntilItAnswersAgain) {
  auto& fake = AddFake(FakeMode::kOk);
  uint16_t port = fake.port();
  StartGateway({Url(port)});
  const std::string healthy = "kinference_endpoint_healthy{endpoint=\"p/0\"}";
  // Polls /metrics until the gauge reads `want` (a hang guard, not a timing bound).
  auto wait_for = [&](double want) {
    for (int i = 0; i < 1000; ++i) {
      if (Metric(healthy) == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  ASSERT_TRUE(wait_for(1));
  std::promise<void> stopped;
  boost::asio::post(io_, [&] {
    fake.Stop();
    stopped.set_value();
  });
  stopped.get_future().wait();
  ASSERT_TRUE(wait_for(0));  // a refused scrape ejects it (vLLM serves /metrics on its port)
  EXPECT_EQ(Call("GET", "/health").status, 200);  // liveness: the gateway itself
  EXPECT_EQ(Call("GET", "/ready").status, 503);   // readiness: no model can be served
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503);  // no healthy endpoint: refused without a connect attempt
  EXPECT_EQ(json::parse(r.body).at("error").at("type").as_string(), "service_unavailable_error");

  std::promise<FakeUpstream*> revived;
  boost::asio::post(io_, [&] {
    fakes_.push_back(std::make_unique<FakeUpstream>(io_, FakeMode::kOk, port));
    revived.set_value(fakes_.back().get());
  });
  FakeUpstream* again = revived.get_future().get();
  ASSERT_EQ(again->port(), port);
  ASSERT_TRUE(wait_for(1));
  EXPECT_EQ(Post(kChat).status, 200);
  EXPECT_EQ(again->requests(), 1);
}

// A known path with a method it has no route for: 405 with `Allow` (RFC 9110 15.5.6), the
// body in the path's API error shape; unknown paths stay 404. Nothing goes upstream.
TEST_F(ProxyTest, WrongMethodOnKnownPathIs405WithAllow) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  auto openai = [&](const std::string& method, const std::string& path, const std::string& allow) {
    auto r = Call(method, path, method == "GET" ? "" : kChat);
    EXPECT_EQ(r.status, 405) << method << " " << path << ": " << r.body;
    EXPECT_EQ(r.headers.Find("allow"), allow) << method << " " << path;
    auto error = json::parse(r.body).at("error").as_object();
    EXPECT_EQ(error.at("type").as_string(), "invalid_request_error");
    EXPECT_EQ(error.at("code").as_int64(), 405);
    EXPECT_TRUE(error.at("param").is_null());
    EXPECT_NE(error.at("message").as_string().find(method), std::string::npos);
  };
  openai("GET", "/v1/chat/completions", "POST");
  openai("PUT", "/v1/completions", "POST");
  openai("POST", "/v1/models", "GET, HEAD");
  openai("DELETE", "/health", "GET, HEAD");
  // /v1/messages: Anthropic's shape.
  auto messages = Call("DELETE", "/v1/messages");
  EXPECT_EQ(messages.status, 405);
  EXPECT_EQ(messages.headers.Find("allow"), "POST");
  auto body = json::parse(messages.body).as_object();
  EXPECT_EQ(body.at("type").as_string(), "error");
  EXPECT_EQ(body.at("error").at("type").as_string(), "invalid_request_error");
  EXPECT_FALSE(body.at("error").at("message").as_string().empty());
  // Unknown paths: 404, OpenAI shape, no Allow.
  for (const char* method : {"GET", "POST"}) {
    auto unknown = Call(method, "/v1/nope");
    EXPECT_EQ(unknown.status, 404) << method;
    EXPECT_TRUE(unknown.headers.Find("allow").empty());
    EXPECT_EQ(json::parse(unknown.body).at("error").at("type").as_string(), "not_found_error");
  }
  // The routes themselves still answer.
  EXPECT_EQ(Call("GET", "/v1/models").status, 200);
  EXPECT_EQ(Post(kChat).status, 200);
  EXPECT_EQ(fake.requests(), 1);
}

// Splits off the first response's head (through the blank line) from what follows.
std::string TakeHead(std::string& rest) {
  size_t end = rest.find("\r\n\r\n");
  if (end == std::string::npos) return std::exchange(rest, "");
  std::string head = rest.substr(0, end + 4);
  rest.erase(0, end + 4);
  return head;
}

// HEAD (RFC 9110 9.3.2) on one kept-alive connection: GET routes answer it with GET's
// status and headers and no body; a POST-only path answers 405 with `Allow: POST` and no
// body; the GET that follows is intact (a body on a HEAD response would desync it).
TEST_F(ProxyTest, HeadIsGetWithoutBodyAndNeverCarriesOne) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  auto get_health = Call("GET", "/health");
  auto get_models = Call("GET", "/v1/models");
  std::string rest = RawExchange(port_,
                                 "HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "HEAD /debug/decisions HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "HEAD /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "HEAD /v1/messages/count_tokens HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string all = rest;
  std::string health = TakeHead(rest);
  EXPECT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << all;
  EXPECT_NE(health.find("Content-Length: " + std::to_string(get_health.body.size()) + "\r\n"),
            std::string::npos)
      << health;
  std::string models = TakeHead(rest);
  EXPECT_EQ(models.rfind("HTTP/1.1 200", 0), 0u) << all;
  EXPECT_NE(models.find("Content-Length: " + std::to_string(get_models.body.size()) + "\r\n"),
            std::string::npos)
      << models;
  EXPECT_EQ(TakeHead(rest).rfind("HTTP/1.1 200", 0), 0u) << all;  // /metrics
  EXPECT_EQ(TakeHead(rest).rfind("HTTP/1.1 200", 0), 0u) << all;  // /debug/decisions
  std::string chat = TakeHead(rest);
  EXPECT_EQ(chat.rfind("HTTP/1.1 405", 0), 0u) << all;
  EXPECT_NE(chat.find("Allow: POST\r\n"), std::string::npos) << chat;
  EXPECT_EQ(TakeHead(rest).rfind("HTTP/1.1 404", 0), 0u) << all;
  // Then the GET, whole.
  std::string get = TakeHead(rest);
  EXPECT_EQ(get.rfind("HTTP/1.1 200", 0), 0u) << all;
  EXPECT_EQ(rest, get_health.body) << all;
  EXPECT_EQ(fake.requests(), 0);
}

// Paths under /v1/messages/ (count_tokens, batches, ...) are the Anthropic front's: their
// 404 is in Anthropic's error shape (the Anthropic SDK surfaces other shapes raw).
TEST_F(ProxyTest, UnknownPathsUnderMessagesAre404InAnthropicShape) {
  auto& fake = AddFake(FakeMode::kOk);
  StartGateway({Url(fake.port())});
  for (auto [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"POST", "/v1/messages/count_tokens"},
                                                        {"GET", "/v1/messages/batches"},
                                                        {"POST", "/v1/messages/"},
                                                        {"GET", "/v1/messages/batches/abc?x=1"}}) {
    auto r = Call(method, path, method == "POST" ? "{}" : "");
    EXPECT_EQ(r.status, 404) << method << " " << path << ": " << r.body;
    EXPECT_TRUE(r.headers.Find("allow").empty()) << path;
    auto body = json::parse(r.body).as_object();
    EXPECT_EQ(body.at("type").as_string(), "error") << r.body;
    EXPECT_EQ(body.at("error").at("type").as_string(), "not_found_error") << r.body;
    EXPECT_NE(body.at("error").at("message").as_string().find(path.substr(0, path.find('?'))),
              std::string::npos)
        << r.body;
  }
  // Only /v1/messages followed by "/" (or nothing): other paths keep OpenAI's shape.
  auto other = Call("POST", "/v1/messagesx", "{}");
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(json::parse(other.body).at("error").at("type").as_string(), "not_found_error");
  EXPECT_EQ(json::parse(other.body).at("error").at("code").as_int64(), 404);
  EXPECT_EQ(fake.requests(), 0);
}

}  // namespace
}  // namespace kinference::gateway
