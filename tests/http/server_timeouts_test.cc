// ServerOptions timeouts, each on its own: header_timeout_s (a request's header after its
// first byte, or after accept), keep_alive_timeout_s (idle between requests) and their
// independence. Raw sockets; the other timeout is set far longer than the test's own
// wait, so which one closed the connection is unambiguous without timing assertions.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::ServerFixture;
namespace asio = boost::asio;

class ServerTimeoutsTest : public ServerFixture {
 protected:
  void SetUp() override {
    setup_ = [](Server& s) {
      s.Route("GET", "/ok",
              [](Request, std::shared_ptr<ResponseWriter> w) { w->Send(200, "text/plain", "ok"); });
    };
  }
  std::unique_ptr<asio::ip::tcp::socket> Connect() {
    auto s = std::make_unique<asio::ip::tcp::socket>(client_io_);
    s->connect({asio::ip::make_address("127.0.0.1"), port_});
    return s;
  }
  // Reads until the server closes (returns what it sent) or `limit_s` passes (returns
  // "(still open)" appended): a hang guard far above the timeouts under test.
  std::string ReadUntilClosed(asio::ip::tcp::socket& s, double limit_s = 20) {
    std::string got;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    s.non_blocking(true);
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      boost::system::error_code ec;
      size_t n = s.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::would_block) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      if (ec) return got;
      got.append(buf, n);
    }
    return got + "(still open)";
  }
  asio::io_context client_io_;
};

TEST_F(ServerTimeoutsTest, PartialHeaderIsDroppedAfterHeaderTimeout) {
  ServerOptions o;
  o.header_timeout_s = 0.2;
  o.keep_alive_timeout_s = 600;  // not this one
  StartServer(o);
  auto s = Connect();
  asio::write(*s, asio::buffer(std::string("GET /ok HTTP/1.1\r\nHost: x\r\n")));
  EXPECT_EQ(ReadUntilClosed(*s), "");
}

TEST_F(ServerTimeoutsTest, SilentNewConnectionIsDroppedAfterHeaderTimeout) {
  ServerOptions o;
  o.header_timeout_s = 0.2;
  o.keep_alive_timeout_s = 600;
  StartServer(o);
  auto s = Connect();
  EXPECT_EQ(ReadUntilClosed(*s), "");
}

TEST_F(ServerTimeoutsTest, IdleKeptAliveConnectionIsDroppedAfterKeepAliveTimeout) {
  ServerOptions o;
  o.header_timeout_s = 600;  // not this one
  o.keep_alive_timeout_s = 0.2;
  StartServer(o);
  auto s = Connect();
  asio::write(*s, asio::buffer(std::string("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")));
  std::string got = ReadUntilClosed(*s);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(got.find("\r\n\r\nok"), std::string::npos) << got;
  EXPECT_EQ(got.find("(still open)"), std::string::npos) << got;
}

TEST_F(ServerTimeoutsTest, NextRequestStartedInTimeGetsTheHeaderTimeoutForTheRest) {
  ServerOptions o;
  o.header_timeout_s = 600;
  o.keep_alive_timeout_s = 3;
  StartServer(o);
  auto s = Connect();
  asio::write(*s, asio::buffer(std::string("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")));
  char buf[4096];
  std::string first;
  while (first.find("\r\n\r\nok") == std::string::npos) {
    size_t n = s->read_some(asio::buffer(buf));
    first.append(buf, n);
  }
  // The next request's first byte at once, the rest after longer than the keep-alive
  // timeout: the idle wait ended with that byte, so the header timeout (600 s) applies.
  asio::write(*s, asio::buffer(std::string("G")));
  std::this_thread::sleep_for(std::chrono::seconds(5));
  asio::write(*s,
              asio::buffer(std::string("ET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
  std::string second = ReadUntilClosed(*s);
  EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << second;
}

}  // namespace
}  // namespace kinference::http
