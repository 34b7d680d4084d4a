// max_buffered_body_bytes and max_connections from the gateway config: anonymous clients
// (anonymous_tenant) uploading large bodies cannot make the gateway hold more than the
// cap; the refusal is 503 in OpenAI's shape, 529 overloaded_error on /v1/messages, with
// Retry-After and x-request-id; the bytes return when the response ends.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <chrono>
#include <thread>

#include "fake_upstream.h"
#include "gateway_harness.h"
#include "testing/wire.h"

namespace kinference::gateway {
namespace {

using ::kinference::testing::ReadUntil;
using testing::FakeMode;
using testing::FakeUpstream;
using tcp = boost::asio::ip::tcp;

constexpr size_t kCap = 2 << 20;  // max_body_bytes and max_buffered_body_bytes

// A chat body of exactly `size` bytes.
std::string ChatOfSize(size_t size) {
  const std::string head = R"({"model":"m","messages":[{"role":"user","content":")";
  const std::string tail = R"("}]})";
  return head + std::string(size - head.size() - tail.size(), 'x') + tail;
}

class BodyCapProxyTest : public testing::GatewayHarness {
 protected:
  void StartWith(size_t max_connections = 0) {
    fake_ = std::make_unique<FakeUpstream>(io(), FakeMode::kOk);
    OnStop([this] { fake_->Stop(); });
    GatewayConfig c;
    c.scrape_interval_s = 0.2;
    c.pools.push_back(PoolConfig{
        "p", "m", {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(fake_->port()), "t")}});
    c.tenants.enabled = true;
    c.tenants.anonymous_tenant = "free";  // requests without a key are read and served
    c.max_body_bytes = kCap;
    c.max_buffered_body_bytes = kCap;
    c.max_connections = max_connections;
    Start(c);
  }
  std::unique_ptr<tcp::socket> Connect() {
    auto s = std::make_unique<tcp::socket>(client_io_);
    s->connect({boost::asio::ip::make_address("127.0.0.1"), port_});
    return s;
  }
  // What the gateway answers a header announcing `length` body bytes (none sent).
  std::string HeaderOnly(const std::string& path, size_t length) {
    auto s = Connect();
    boost::asio::write(*s, boost::asio::buffer("POST " + path +
                                               " HTTP/1.1\r\nHost: x\r\nx-request-id: cap-1\r\n"
                                               "Content-Type: application/json\r\n"
                                               "Content-Length: " +
                                               std::to_string(length) + "\r\n\r\n"));
    return ReadUntil(*s);
  }

  boost::asio::io_context client_io_;
  std::unique_ptr<FakeUpstream> fake_;
};

TEST_F(BodyCapProxyTest, AnonymousBodiesBeyondTheCapAreRefusedInEachApisShape) {
  StartWith();
  // An anonymous client announces 1.5 MiB; the 100 Continue says the gateway took it on.
  const std::string first = ChatOfSize(1536 * 1024);
  auto s = Connect();
  boost::asio::write(
      *s, boost::asio::buffer("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                              "Connection: close\r\nContent-Length: " +
                              std::to_string(first.size()) + "\r\n\r\n"));
  ASSERT_NE(ReadUntil(*s, "\r\n\r\n").find("100 Continue"), std::string::npos);
  // 1 MiB more does not fit: refused on its header, in each API's shape.
  std::string r = HeaderOnly("/v1/chat/completions", 1 << 20);
  EXPECT_NE(r.find("HTTP/1.1 503"), std::string::npos) << r;
  EXPECT_NE(r.find(R"("type":"service_unavailable_error")"), std::string::npos) << r;
  EXPECT_NE(r.find("Retry-After: 5"), std::string::npos) << r;
  EXPECT_NE(r.find("x-request-id: cap-1"), std::string::npos) << r;
  r = HeaderOnly("/v1/messages", 1 << 20);
  EXPECT_NE(r.find("HTTP/1.1 529"), std::string::npos) << r;
  EXPECT_NE(r.find(R"({"type":"error","error":{"type":"overloaded_error")"), std::string::npos)
      << r;
  EXPECT_NE(r.find("Retry-After: 5"), std::string::npos) << r;
  // A small request is served meanwhile.
  EXPECT_EQ(Post(ChatOfSize(1000)).status, 200);
  EXPECT_EQ(fake_->requests(), 1);
  // The first body arrives and is served; once its connection closes its bytes are back
  // and a body as large is read again.
  boost::asio::write(*s, boost::asio::buffer(first));
  r = ReadUntil(*s);
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
  EXPECT_EQ(Post(ChatOfSize(1536 * 1024)).status, 200);
  EXPECT_EQ(fake_->requests(), 3);
}

// max_connections: with 1, a second client is accepted only once the first has gone.
TEST_F(BodyCapProxyTest, MaxConnectionsFromTheConfigTakesEffect) {
  StartWith(/*max_connections=*/1);
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  auto a = Connect();
  boost::asio::write(*a, boost::asio::buffer(health));
  ASSERT_NE(ReadUntil(*a, "\"ok\"").find("200 OK"), std::string::npos);
  auto b = Connect();  // the kernel's backlog takes it; the gateway does not accept it
  boost::asio::write(*b, boost::asio::buffer(health));
  b->non_blocking(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  char buf[512];
  boost::system::error_code ec;
  b->read_some(boost::asio::buffer(buf), ec);
  EXPECT_EQ(ec, boost::asio::error::would_block);
  a->close();
  b->non_blocking(false);
  EXPECT_NE(ReadUntil(*b, "\"ok\"").find("200 OK"), std::string::npos);
}

}  // namespace
}  // namespace kinference::gateway
