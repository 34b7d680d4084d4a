// ServerOptions::max_connections: at the limit the server stops accepting; a connection
// that closes lets the next one in. ServerOptions::header_check: a request refused on its
// header is answered before its body is read.
#include <gtest/gtest.h>

#include <atomic>

#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::ServerFixture;

class LimitsTest : public ServerFixture {
 protected:
  size_t Open() {
    std::promise<size_t> p;
    auto f = p.get_future();
    boost::asio::post(io_, [&] { p.set_value(server_->OpenConnections()); });
    return f.get();
  }
};

TEST_F(LimitsTest, AtMaxConnectionsTheNextClientWaitsUntilOneCloses) {
  setup_ = [](Server& s) {
    s.Route("GET", "/ok",
            [](Request, std::shared_ptr<ResponseWriter> w) { w->Send(200, "text/plain", "ok"); });
  };
  ServerOptions o;
  o.max_connections = 2;
  StartServer(o);
  boost::asio::io_context io;
  using tcp = boost::asio::ip::tcp;
  tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), port_);
  tcp::socket a(io), b(io), c(io);
  a.connect(ep);
  b.connect(ep);
  // Both idle connections are accepted (served requests prove it).
  const std::string req = "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n";
  char buf[512];
  for (auto* s : {&a, &b}) {
    boost::asio::write(*s, boost::asio::buffer(req));
    size_t n = s->read_some(boost::asio::buffer(buf));
    EXPECT_NE(std::string(buf, n).find("200 OK"), std::string::npos);
  }
  EXPECT_EQ(Open(), 2u);
  // The third connects (kernel backlog) but is not accepted: its request gets no answer.
  c.connect(ep);
  boost::asio::write(c, boost::asio::buffer(req));
  c.non_blocking(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  boost::system::error_code ec;
  c.read_some(boost::asio::buffer(buf), ec);
  EXPECT_EQ(ec, boost::asio::error::would_block);
  EXPECT_EQ(Open(), 2u);
  // One closes: the third is accepted and served.
  a.close();
  c.non_blocking(false);
  size_t n = c.read_some(boost::asio::buffer(buf), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_NE(std::string(buf, n).find("200 OK"), std::string::npos);
}

// The check refuses on the header alone: the client announces 10 MiB and sends none of
// it, yet gets the refusal (in the server's error shape, 100-continue not sent) and the
// connection closes; the handler never runs.
TEST_F(LimitsTest, HeaderCheckRefusesBeforeTheBodyIsRead) {
  std::atomic<int> handled{0};
  setup_ = [&](Server& s) {
    s.Route("POST", "/up", [&](Request, std::shared_ptr<ResponseWriter> w) {
      ++handled;
      w->Send(200, "text/plain", "ok");
    });
  };
  ServerOptions o;
  o.header_check = [](const Request& head) {
    if (head.headers.Find("authorization") == "let me in") return Status::Ok();
    return Status(ErrorCode::kUnauthenticated, "no key for " + head.method + " " + head.path);
  };
  StartServer(o);
  std::string got = RawExchange(
      "POST /up?x=1 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
      "Content-Length: 10485760\r\n\r\n");
  EXPECT_NE(got.find("HTTP/1.1 401"), std::string::npos) << got;
  EXPECT_NE(got.find("no key for POST /up"), std::string::npos) << got;
  EXPECT_EQ(got.find("100 Continue"), std::string::npos) << got;
  EXPECT_EQ(handled.load(), 0);
  // Passing the check, the body is read and routed as usual.
  got = RawExchange(
      "POST /up HTTP/1.1\r\nHost: x\r\nauthorization: let me in\r\nContent-Length: 2\r\n"
      "Connection: close\r\n\r\nhi");
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
  EXPECT_EQ(handled.load(), 1);
}

}  // namespace
}  // namespace kinference::http
