// Driver tests against an in-process fake OpenAI streaming server (http::Server), so the
// client side (SSE parsing, usage, headers, multi-turn history, closed loop) is checked
// without engine-sim.
#include "bench/driver.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <mutex>
#include <thread>

#include "api/sse.h"
#include "http/server.h"

namespace kinference::bench {
namespace {

namespace asio = boost::asio;

// Streams max_tokens content chunks " t<turn>" (the turn = number of user messages - 1),
// then a usage chunk reporting `cached_tokens` = 7 and [DONE]. Requests carrying
// x-kinference-strategy: fail get a 503.
class FakeServer {
 public:
  FakeServer() : server_(io_, http::ServerOptions{}) {
    server_.Route("POST", "/v1/chat/completions",
                  [this](http::Request req, std::shared_ptr<http::ResponseWriter> w) {
                    Handle(std::move(req), std::move(w));
                  });
    auto port = server_.Start();
    EXPECT_TRUE(port.ok());
    port_ = port.ok() ? *port : 0;
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeServer() {
    asio::post(io_, [this] { server_.Stop(); });
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return port_; }
  std::vector<boost::json::object> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  int max_in_flight() {
    std::lock_guard lock(mu_);
    return max_in_flight_;
  }
  void set_hold_ms(int ms) { hold_ms_ = ms; }

 private:
  void Handle(http::Request req, std::shared_ptr<http::ResponseWriter> w) {
    if (req.headers.Find("x-kinference-strategy") == "fail") {
      w->Send(503, "application/json", R"({"error":{"message":"no endpoint"}})");
      return;
    }
    auto body = boost::json::parse(req.body).as_object();
    {
      std::lock_guard lock(mu_);
      bodies_.push_back(body);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    }
    auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(hold_ms_));
    timer->async_wait([this, timer, w, body](const boost::system::error_code&) {
      int n = static_cast<int>(body.at("max_tokens").as_int64());
      int users = 0;
      for (const auto& m : body.at("messages").as_array()) {
        users += m.as_object().at("role").as_string() == "user";
      }
      http::Headers h;
      h.Add("x-kinference-endpoint", "fake-1");
      w->StartStream(200, "text/event-stream", h);
      w->Write(api::FormatSse(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})"));
      for (int i = 0; i < n; ++i) {
        boost::json::object chunk{
            {"choices",
             boost::json::array{
                 {{"index", 0}, {"delta", {{"content", " t" + std::to_string(users - 1)}}}}}}};
        w->Write(api::FormatSse(boost::json::serialize(chunk)));
      }
      w->Write(api::FormatSse(R"({"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":)" +
                              std::to_string(n) +
                              R"(,"prompt_tokens_details":{"cached_tokens":7}}})"));
      w->Write(api::FormatSse("[DONE]"));
      w->End();
      std::lock_guard lock(mu_);
      --in_flight_;
    });
  }

  asio::io_context io_;
  http::Server server_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<boost::json::object> bodies_;
  int in_flight_ = 0, max_in_flight_ = 0;
  int hold_ms_ = 0;
};

workload::Session OneTurn(std::string id, int max_tokens, double arrival) {
  workload::Session s;
  s.id = std::move(id);
  s.arrival_s = arrival;
  s.turns.push_back({" hello world", max_tokens, 0});
  return s;
}

TEST(DriverTest, ChatRequestBodyHasStreamingFields) {
  auto body = boost::json::parse(ChatRequestBody(OneTurn("a", 5, 0), 0, {}, "m")).as_object();
  EXPECT_EQ(body.at("model").as_string(), "m");
  EXPECT_EQ(body.at("max_tokens").as_int64(), 5);
  EXPECT_TRUE(body.at("stream").as_bool());
  EXPECT_TRUE(body.at("ignore_eos").as_bool());
  EXPECT_TRUE(body.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(body.at("messages").as_array().size(), 1u);
}

TEST(DriverTest, OpenLoopRecordsTimingsUsageAndEndpoint) {
  FakeServer server;
  std::vector<workload::Session> sessions = {OneTurn("a", 5, 0.0), OneTurn("b", 3, 0.01)};
  DriverOptions opts;
  opts.port = server.port();
  opts.model = "m";
  opts.strategy = "predicted-ttft";
  auto out = RunSessions(sessions, opts);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->records.size(), 2u);
  for (const auto& r : out->records) {
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_GE(r.ttft_s, 0.0);
    EXPECT_GE(r.e2e_s, r.ttft_s);
    EXPECT_EQ(r.endpoint, "fake-1");
    EXPECT_EQ(r.prompt_tokens, 100);
    EXPECT_EQ(r.cached_tokens, 7);
    EXPECT_EQ(r.itl_s.size(), static_cast<size_t>(r.completion_tokens - 1));
  }
  EXPECT_GT(out->duration_s, 0.0);
}

TEST(DriverTest, MultiturnSendsReceivedRepliesAsHistory) {
  FakeServer server;
  workload::Session s;
  s.id = "conv";
  s.system_prompt = " sys";
  for (int k = 0; k < 3; ++k) s.turns.push_back({" user" + std::to_string(k), 2, 0.001});
  DriverOptions opts;
  opts.port = server.port();
  opts.model = "m";
  opts.concurrency = 1;
  auto out = RunSessions({s}, opts);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->records.size(), 3u);
  auto bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 3u);
  const auto& last = bodies[2].at("messages").as_array();
  ASSERT_EQ(last.size(), 6u);  // system, (user, assistant) x 2, user
  EXPECT_EQ(last[2].at("role").as_string(), "assistant");
  EXPECT_EQ(last[2].at("content").as_string(), " t0 t0");
  EXPECT_EQ(last[4].at("content").as_string(), " t1 t1");
  EXPECT_EQ(last[5].at("content").as_string(), " user2");
  EXPECT_EQ(out->records[2].turn, 2u);
}

TEST(DriverTest, ClosedLoopKeepsConcurrencyAndRecordsErrors) {
  FakeServer server;
  server.set_hold_ms(20);
  std::vector<workload::Session> sessions;
  for (int i = 0; i < 7; ++i) {
    auto s = OneTurn("s" + std::to_string(i), 2, 0);
    s.arrival_s.reset();
    sessions.push_back(s);
  }
  DriverOptions opts;
  opts.port = server.port();
  opts.model = "m";
  opts.concurrency = 3;
  auto out = RunSessions(sessions, opts);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->records.size(), 7u);
  EXPECT_LE(server.max_in_flight(), 3);

  opts.strategy = "fail";
  auto failed = RunSessions(sessions, opts);
  ASSERT_TRUE(failed.ok());
  ASSERT_EQ(failed->records.size(), 7u);
  EXPECT_NE(failed->records[0].error.find("HTTP 503"), std::string::npos);

  opts.concurrency = 0;  // open loop needs arrival times
  EXPECT_FALSE(RunSessions(sessions, opts).ok());
}

TEST(DriverTest, ConnectionRefusedIsARecordedError) {
  uint16_t port;
  {
    FakeServer server;  // take a free port, then close it
    port = server.port();
  }
  DriverOptions opts;
  opts.port = port;
  opts.model = "m";
  auto out = RunSessions({OneTurn("a", 2, 0)}, opts);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->records.size(), 1u);
  EXPECT_FALSE(out->records[0].ok());
}

}  // namespace
}  // namespace kinference::bench
