// ServerOptions::max_connections: at the limit the server stops accepting; a connection
// that closes lets the next one in.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kinference::http
