// Client connection reuse (keep-alive pooling, http/client.h): what a server sees.
//
// PoolTestServer is a blocking, thread-per-connection HTTP/1.1 server (optionally TLS)
// that counts accepted connections, requests and connections the client closed, and
// misbehaves on purpose by target: /ok (keep-alive), /chunked, /close (Connection:
// close), /close-after (keep-alive announced, then closed), /drop (read, then close
// without answering), /drop-if-reused and /partial-if-reused (misbehave only on a
// connection's second and later requests), /stream (a chunked head and one chunk, then
// waits for the client to go away), /slow (answers after 1 s).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http/client.h"
#include "http/connection_pool.h"
#include "http/server.h"
#include "server_fixture.h"
#include "tls_fake_server.h"

namespace kinference::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

class PoolTestServer {
 public:
  explicit PoolTestServer(const kinference::testing::TestCert* cert = nullptr) {
    if (cert != nullptr) {
      ssl_.emplace(asio::ssl::context::tls_server);
      ssl_->use_certificate_chain_file(cert->cert_file);
      ssl_->use_private_key_file(cert->key_file, asio::ssl::context::pem);
    }
    acceptor_.emplace(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port_ = acceptor_->local_endpoint().port();
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~PoolTestServer() {
    stopping_ = true;
    {
      boost::system::error_code ec;
      tcp::socket wake(io_);
      wake.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
      accept_thread_.join();
    }
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& c : conns_) {
        if (!c->closed) ::shutdown(c->socket.native_handle(), SHUT_RDWR);
      }
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }
  int requests() const { return requests_; }
  // Connections whose client closed (or reset) them while the server waited to read.
  int client_closed() const { return client_closed_; }

 private:
  struct Conn {
    explicit Conn(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    bool closed = false;  // under mu_
  };

  void AcceptLoop() {
    while (!stopping_) {
      boost::system::error_code ec;
      tcp::socket socket(io_);
      acceptor_->accept(socket, ec);
      if (ec || stopping_) continue;
      ++accepted_;
      auto conn = std::make_shared<Conn>(std::move(socket));
      std::lock_guard<std::mutex> lock(mu_);
      conns_.push_back(conn);
      threads_.emplace_back([this, conn] { Serve(conn); });
    }
  }

  void Serve(const std::shared_ptr<Conn>& conn) {
    if (ssl_) {
      asio::ssl::stream<tcp::socket&> stream(conn->socket, *ssl_);
      boost::system::error_code ec;
      stream.handshake(asio::ssl::stream_base::server, ec);
      if (!ec) Loop(stream);
    } else {
      Loop(conn->socket);
    }
    std::lock_guard<std::mutex> lock(mu_);
    conn->closed = true;
    boost::system::error_code ec;
    conn->socket.shutdown(tcp::socket::shutdown_both, ec);
    conn->socket.close(ec);
  }

  template <typename Stream>
  void Loop(Stream& s) {
    beast::flat_buffer buffer;
    int on_this_connection = 0;
    while (true) {
      boost::system::error_code ec;
      bhttp::request<bhttp::string_body> req;
      bhttp::read(s, buffer, req, ec);
      if (ec) {
        ++client_closed_;
        return;
      }
      const int n = ++requests_;
      const bool reused = on_this_connection++ > 0;
      const std::string target(req.target());
      if (target == "/drop" || (target == "/drop-if-reused" && reused)) return;
      if (target == "/partial-if-reused" && reused) {
        asio::write(s, asio::buffer(std::string("HTTP/1.1 200 OK\r\n")), ec);
        return;
      }
      if (target == "/stream") {
        asio::write(s,
                    asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                             "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")),
                    ec);
        char sink[256];
        while (!ec) s.read_some(asio::buffer(sink), ec);
        ++client_closed_;
        return;
      }
      if (target == "/slow") std::this_thread::sleep_for(std::chrono::seconds(1));
      bhttp::response<bhttp::string_body> res{bhttp::status::ok, 11};
      res.set(bhttp::field::content_type, "text/plain");
      res.body() = "ok " + std::to_string(n);
      if (target == "/chunked") {
        res.chunked(true);
      } else {
        res.prepare_payload();
      }
      if (target == "/close") res.keep_alive(false);
      bhttp::write(s, res, ec);
      if (ec || target == "/close" || target == "/close-after") return;
    }
  }

  asio::io_context io_;  // never run: blocking operations only
  std::optional<asio::ssl::context> ssl_;
  std::optional<tcp::acceptor> acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0}, requests_{0}, client_closed_{0};
  std::mutex mu_;
  std::vector<std::shared_ptr<Conn>> conns_;
  std::vector<std::thread> threads_;
  std::thread accept_thread_;
};

// Polls `done` for up to 10 s (a hang guard, not a timing assertion).
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

ClientRequest Get(uint16_t port, const std::string& target) {
  ClientRequest r;
  r.method = "GET";
  r.port = port;
  r.target = target;
  r.header_timeout_s = 20;  // hang guard only
  r.idle_timeout_s = 20;
  return r;
}

// One Fetch on `io`, run until it completes. Idle pooled connections are not work, so
// run() returns as soon as the call is done (asserted: well under the 4 s idle timeout).
Result<Response> FetchOn(asio::io_context& io, ClientRequest r) {
  std::optional<Result<Response>> out;
  io.restart();
  Fetch(io.get_executor(), std::move(r), [&](Result<Response> res) { out = std::move(res); });
  const auto start = Clock::now();
  io.run();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3)) << "run() kept running";
  if (!out) return Status(ErrorCode::kInternal, "no result");
  return std::move(*out);
}

TEST(ClientPoolTest, SequentialCallsShareOneConnection) {
  PoolTestServer server;
  asio::io_context io;
  for (int i = 1; i <= 3; ++i) {
    auto r = FetchOn(io, Get(server.port(), i == 2 ? "/chunked" : "/ok"));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "ok " + std::to_string(i));
  }
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_EQ(server.requests(), 3);
  auto stats = GetClientPoolStats(io.get_executor());
  EXPECT_EQ(stats.opened, 1u);
  EXPECT_EQ(stats.reused, 2u);
  EXPECT_EQ(stats.idle, 1u);
}

TEST(ClientPoolTest, StrandsOfOneIoContextShareThePool) {
  PoolTestServer server;
  asio::io_context io;
  for (int i = 0; i < 2; ++i) {
    std::optional<Result<Response>> out;
    io.restart();
    Fetch(asio::make_strand(io), Get(server.port(), "/ok"),
          [&](Result<Response> res) { out = std::move(res); });
    io.run();
    ASSERT_TRUE(out && out->ok());
  }
  EXPECT_EQ(server.accepted(), 1);
}

TEST(ClientPoolTest, ConnectionCloseResponseIsNotPooled) {
  PoolTestServer server;
  asio::io_context io;
  for (int i = 0; i < 2; ++i) {
    auto r = FetchOn(io, Get(server.port(), "/close"));
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(GetClientPoolStats(io.get_executor()).idle, 0u);
}

TEST(ClientPoolTest, OptOutUsesAConnectionPerCall) {
  PoolTestServer server;
  asio::io_context io;
  for (int i = 0; i < 2; ++i) {
    auto req = Get(server.port(), "/ok");
    req.reuse_connection = false;
    auto r = FetchOn(io, std::move(req));
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  EXPECT_EQ(server.accepted(), 2);
  // Each connection is closed by the client after its response.
  EXPECT_TRUE(WaitFor([&] { return server.client_closed() == 2; }));
}

TEST(ClientPoolTest, ServerClosedIdleConnectionIsNotUsed) {
  PoolTestServer server;
  asio::io_context io;
  for (int i = 0; i < 3; ++i) {
    auto r = FetchOn(io, Get(server.port(), "/close-after"));
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  EXPECT_EQ(server.accepted(), 3);
  EXPECT_EQ(server.requests(), 3);
}

TEST(ClientPoolTest, StaleReusedConnectionIsRetriedOnANewOne) {
  PoolTestServer server;
  asio::io_context io;
  auto first = FetchOn(io, Get(server.port(), "/drop-if-reused"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  // The pooled connection takes the request and closes without a byte of response: the
  // call is retried once on a new connection, where the request is its first.
  auto second = FetchOn(io, Get(server.port(), "/drop-if-reused"));
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->body, "ok 3");
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(GetClientPoolStats(io.get_executor()).stale_retries, 1u);
}

// A POST the reused connection took in full before dropping may have been worked on (a
// provider may bill it): it is not sent again; the caller gets the error and its own
// retry policy decides.
TEST(ClientPoolTest, WrittenPostIsNotRetriedOnAStaleConnection) {
  PoolTestServer server;
  asio::io_context io;
  ASSERT_TRUE(FetchOn(io, Get(server.port(), "/drop-if-reused")).ok());
  ClientRequest post = Get(server.port(), "/drop-if-reused");
  post.method = "POST";
  post.body = R"({"model":"m","prompt":"hi"})";
  auto r = FetchOn(io, post);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_EQ(server.requests(), 2);  // the POST reached the server exactly once
  EXPECT_EQ(GetClientPoolStats(io.get_executor()).stale_retries, 0u);
}

TEST(ClientPoolTest, NewConnectionFailureIsNotRetried) {
  PoolTestServer server;
  asio::io_context io;
  auto r = FetchOn(io, Get(server.port(), "/drop"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_EQ(server.requests(), 1);
}

TEST(ClientPoolTest, NoRetryAfterAResponseByteArrived) {
  PoolTestServer server;
  asio::io_context io;
  ASSERT_TRUE(FetchOn(io, Get(server.port(), "/partial-if-reused")).ok());
  // Reused connection; the server sends a status line, then closes.
  auto r = FetchOn(io, Get(server.port(), "/partial-if-reused"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(GetClientPoolStats(io.get_executor()).stale_retries, 0u);
}

TEST(ClientPoolTest, CancelledCallClosesItsConnection) {
  PoolTestServer server;
  asio::io_context io;
  ASSERT_TRUE(FetchOn(io, Get(server.port(), "/ok")).ok());
  // A streamed call on the pooled connection, cancelled after its first bytes.
  std::shared_ptr<Call> call;
  std::optional<Status> status;
  ClientCallbacks cb;
  cb.on_data = [&](std::string_view) { call->Cancel(); };
  cb.on_complete = [&](Status s) { status = std::move(s); };
  io.restart();
  call = StartCall(io.get_executor(), Get(server.port(), "/stream"), std::move(cb));
  io.run();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code(), ErrorCode::kCancelled);
  // The server sees the disconnect (a vLLM-like server aborts the request on it) ...
  EXPECT_TRUE(WaitFor([&] { return server.client_closed() == 1; }));
  // ... and the next call gets a new connection.
  ASSERT_TRUE(FetchOn(io, Get(server.port(), "/ok")).ok());
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(GetClientPoolStats(io.get_executor()).reused, 1u);
}

TEST(ClientPoolTest, TimedOutCallDoesNotPoolItsConnection) {
  PoolTestServer server;
  asio::io_context io;
  ASSERT_TRUE(FetchOn(io, Get(server.port(), "/ok")).ok());
  auto slow = Get(server.port(), "/slow");
  slow.header_timeout_s = 0.2;
  auto r = FetchOn(io, std::move(slow));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kDeadlineExceeded);
  ASSERT_TRUE(FetchOn(io, Get(server.port(), "/ok")).ok());
  EXPECT_EQ(server.accepted(), 2);
}

TEST(ClientPoolTest, IdleConnectionIsClosedAfterItsTimeout) {
  PoolTestServer server;
  asio::io_context io;
  auto req = Get(server.port(), "/ok");
  req.pool_idle_timeout_s = 0.3;
  ASSERT_TRUE(FetchOn(io, req).ok());
  EXPECT_EQ(GetClientPoolStats(io.get_executor()).idle, 1u);
  // With the io_context running, the idle timer closes the connection: the server sees
  // the client close it.
  io.restart();
  auto guard = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  bool closed = WaitFor([&] { return server.client_closed() == 1; });
  guard.reset();
  io.stop();
  runner.join();
  EXPECT_TRUE(closed);
  auto stats = GetClientPoolStats(io.get_executor());
  EXPECT_EQ(stats.idle, 0u);
  EXPECT_EQ(stats.closed_idle, 1u);
  ASSERT_TRUE(FetchOn(io, req).ok());
  EXPECT_EQ(server.accepted(), 2);
}

TEST(ClientPoolTest, IdleConnectionsPerKeyAreCapped) {
  PoolTestServer server;
  asio::io_context io;
  constexpr int kCap = static_cast<int>(detail::ConnectionPool::kMaxIdlePerKey);
  constexpr int kCalls = kCap + 4;
  for (int round = 0; round < 2; ++round) {
    int ok = 0;
    io.restart();
    // All calls start before any completes: each needs a connection of its own.
    for (int i = 0; i < kCalls; ++i) {
      Fetch(io.get_executor(), Get(server.port(), "/ok"), [&](Result<Response> r) {
        if (r.ok()) ++ok;
      });
    }
    io.run();
    EXPECT_EQ(ok, kCalls);
    EXPECT_EQ(GetClientPoolStats(io.get_executor()).idle, static_cast<size_t>(kCap));
  }
  // Round two reused the kCap kept connections and opened 4.
  EXPECT_EQ(server.accepted(), kCalls + (kCalls - kCap));
  EXPECT_EQ(GetClientPoolStats(io.get_executor()).reused, static_cast<size_t>(kCap));
}

TEST(ClientPoolTest, TlsConnectionIsReusedPerHostAndSni) {
  auto cert = kinference::testing::MakeTestCert("server");
  ASSERT_FALSE(cert.cert_file.empty()) << "openssl CLI failed";
  PoolTestServer server(&cert);
  asio::io_context io;
  auto req = Get(server.port(), "/ok");
  req.tls = true;
  req.ca_file = cert.cert_file;
  for (int i = 1; i <= 2; ++i) {
    auto r = FetchOn(io, req);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->body, "ok " + std::to_string(i));
  }
  EXPECT_EQ(server.accepted(), 1);
  // Another key (host name, so SNI "localhost"): not the 127.0.0.1 connection.
  req.host = "localhost";
  ASSERT_TRUE(FetchOn(io, req).ok());
  EXPECT_EQ(server.accepted(), 2);
  // Plain HTTP to the same port does not get a TLS connection either (it fails the TLS
  // server's handshake on a new connection instead).
  auto plain = Get(server.port(), "/ok");
  plain.header_timeout_s = 2;
  EXPECT_FALSE(FetchOn(io, plain).ok());
  EXPECT_EQ(server.accepted(), 3);
}

// Against http::Server (what engine-sim and the gateway serve with).
class ClientPoolServerTest : public testing::ServerFixture {
 protected:
  void SetUp() override {
    setup_ = [](Server& s) {
      s.Route("GET", "/hi",
              [](Request, std::shared_ptr<ResponseWriter> w) { w->Send(200, "text/plain", "hi"); });
    };
  }
};

TEST_F(ClientPoolServerTest, ReusesConnectionToHttpServer) {
  StartServer();
  asio::io_context io;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(FetchOn(io, Req("GET", "/hi")).ok());
  auto stats = GetClientPoolStats(io.get_executor());
  EXPECT_EQ(stats.opened, 1u);
  EXPECT_EQ(stats.reused, 2u);
}

TEST_F(ClientPoolServerTest, ServerKeepAliveTimeoutShorterThanOursIsSurvived) {
  ServerOptions options;
  options.keep_alive_timeout_s = 0.2;
  StartServer(options);
  asio::io_context io;
  auto req = Req("GET", "/hi");
  req.pool_idle_timeout_s = 30;
  ASSERT_TRUE(FetchOn(io, req).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // the server closes
  auto r = FetchOn(io, req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, "hi");
  EXPECT_EQ(GetClientPoolStats(io.get_executor()).opened, 2u);
}

}  // namespace
}  // namespace kinference::http
