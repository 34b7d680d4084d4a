// `kinference bench http`'s load loop against an in-process http::Server: every request is
// answered and counted once, concurrency never exceeds the connections, keep-alive
// connections are reused, failures are counted with the first reason, and the first body
// byte of a stream is timed before its end.
#include "bench/http_load.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>
#include <thread>

#include "http/server.h"

namespace kinference::bench {
namespace {

namespace asio = boost::asio;

// POST /echo answers 200 after `hold_ms`; POST /stream sends one chunk, waits `hold_ms`,
// sends another and ends; POST /fail answers 503.
class Server {
 public:
  explicit Server(int hold_ms) : server_(io_, http::ServerOptions{}), hold_ms_(hold_ms) {
    server_.Route("POST", "/echo",
                  [this](http::Request req, std::shared_ptr<http::ResponseWriter> w) {
                    ++requests_;
                    int now = ++in_flight_;
                    int seen = max_in_flight_.load();
                    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
                    }
                    {
                      std::lock_guard lock(mu_);
                      last_body_ = req.body;
                    }
                    After(hold_ms_, [this, w] {
                      --in_flight_;
                      w->Send(200, "application/json", R"({"ok":true})");
                    });
                  });
    server_.Route("POST", "/stream",
                  [this](http::Request, std::shared_ptr<http::ResponseWriter> w) {
                    ++requests_;
                    w->StartStream(200, "text/event-stream");
                    w->Write("data: first\n\n");
                    After(hold_ms_, [w] {
                      w->Write("data: [DONE]\n\n");
                      w->End();
                    });
                  });
    server_.Route("POST", "/fail", [this](http::Request, std::shared_ptr<http::ResponseWriter> w) {
      ++requests_;
      w->Send(503, "application/json", R"({"error":{"message":"busy"}})");
    });
    auto port = server_.Start();
    EXPECT_TRUE(port.ok());
    port_ = port.ok() ? *port : 0;
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Server() {
    asio::post(io_, [this] { server_.Stop(); });
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return port_; }
  int requests() const { return requests_; }
  int max_in_flight() const { return max_in_flight_; }
  std::string last_body() {
    std::lock_guard lock(mu_);
    return last_body_;
  }

 private:
  template <typename F>
  void After(int ms, F f) {
    auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(ms));
    t->async_wait([t, f](const boost::system::error_code&) { f(); });
  }

  asio::io_context io_;
  http::Server server_;
  int hold_ms_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> requests_{0}, in_flight_{0}, max_in_flight_{0};
  std::mutex mu_;
  std::string last_body_;
};

HttpLoadOptions Options(uint16_t port, std::string path) {
  HttpLoadOptions o;
  o.port = port;
  o.path = std::move(path);
  o.body = R"({"model":"m","messages":[]})";
  return o;
}

TEST(HttpLoadTest, EveryRequestIsSentOnceAndMeasuredAfterTheWarmup) {
  Server server(1);
  HttpLoadOptions o = Options(server.port(), "/echo");
  o.connections = 4;
  o.requests = 200;
  o.warmup = 20;
  auto r = RunHttpLoad(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->requests, 200u);
  EXPECT_EQ(r->errors, 0u);
  EXPECT_EQ(server.requests(), 220);
  EXPECT_LE(server.max_in_flight(), 4);
  EXPECT_EQ(r->reconnects, 0u);  // keep-alive: four connections for 220 requests
  EXPECT_GT(r->requests_per_s, 0);
  EXPECT_EQ(server.last_body(), o.body);
  // Each response was held at least 1 ms by the server.
  EXPECT_GE(r->total.p50_us, 1000);
  EXPECT_LE(r->total.p50_us, r->total.p99_us);
  EXPECT_LE(r->total.p99_us, r->total.max_us);
}

TEST(HttpLoadTest, FirstByteOfAStreamIsTimedBeforeItsEnd) {
  // The server writes the end 200 ms after the first event. The client cannot see the end
  // before the server wrote it, so every total is at least the hold. It can see the first
  // event late (a loaded machine delayed its read), which shrinks the gap it measures: a run
  // under AddressSanitizer beside a full build measured 29.8 ms for a 30 ms hold. So the gap
  // is checked only against half the hold, which still tells a first byte timed on arrival
  // from one timed at the end (gap 0).
  constexpr int kHoldMs = 200;
  Server server(kHoldMs);
  HttpLoadOptions o = Options(server.port(), "/stream");
  o.requests = 5;
  auto r = RunHttpLoad(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->requests, 5u);
  EXPECT_GE(r->total.p50_us, kHoldMs * 1000);
  EXPECT_GE(r->total.p50_us - r->first_byte.p50_us, kHoldMs * 1000 / 2);
}

TEST(HttpLoadTest, Non2xxResponsesAreErrorsWithTheFirstReason) {
  Server server(0);
  HttpLoadOptions o = Options(server.port(), "/fail");
  o.connections = 2;
  o.requests = 10;
  auto r = RunHttpLoad(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->requests, 0u);
  EXPECT_EQ(r->errors, 10u);
  EXPECT_EQ(r->first_error, "HTTP 503");
}

TEST(HttpLoadTest, ConnectionPerRequestOpensOneForEach) {
  Server server(0);
  HttpLoadOptions o = Options(server.port(), "/echo");
  o.requests = 12;
  o.new_connection_per_request = true;
  auto r = RunHttpLoad(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->requests, 12u);
  EXPECT_EQ(r->reconnects, 11u);
}

TEST(HttpLoadTest, RefusedConnectionsAreErrorsNotAHang) {
  uint16_t port;
  {
    Server server(0);
    port = server.port();
  }  // stopped: nothing listens there now
  HttpLoadOptions o = Options(port, "/echo");
  o.requests = 3;
  o.timeout_s = 5;
  auto r = RunHttpLoad(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->requests, 0u);
  EXPECT_EQ(r->errors, 3u);
  EXPECT_NE(r->first_error.find("connect"), std::string::npos) << r->first_error;
}

TEST(HttpLoadTest, ZeroConnectionsIsRefused) {
  HttpLoadOptions o;
  o.connections = 0;
  EXPECT_EQ(RunHttpLoad(o).status().code(), ErrorCode::kInvalidArgument);
}

TEST(HttpLoadTest, SummarizeUsesNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  LatencyStats s = Summarize(v);
  EXPECT_EQ(s.p50_us, 51);
  EXPECT_EQ(s.p90_us, 91);
  EXPECT_EQ(s.p99_us, 100);
  EXPECT_EQ(s.max_us, 100);
  EXPECT_DOUBLE_EQ(s.mean_us, 50.5);
}

}  // namespace
}  // namespace kinference::bench
