// HEAD (RFC 9110 section 9.3.2) on the server, at the raw-socket level: a GET route
// answers HEAD with GET's status and headers (Content-Length included) and no body, and
// no response to HEAD (404, 405 from a fallback, 413, streams) carries a body, so a
// kept-alive connection stays in sync for the next request.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio.hpp>

#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::ServerFixture;

constexpr std::string_view kBody = "hello, world";  // 12 bytes

class HttpHeadTest : public ServerFixture {
 protected:
  void SetUp() override {
    setup_ = [this](Server& s) {
      s.Route("GET", "/thing", [this](Request r, std::shared_ptr<ResponseWriter> w) {
        (r.method == "HEAD" ? head_calls_ : get_calls_)++;
        Headers h;
        h.Add("X-Custom", "yes");
        w->Send(200, "text/plain", std::string(kBody), h);
      });
      s.Route("POST", "/post-only", [](Request, std::shared_ptr<ResponseWriter> w) {
        w->Send(200, "text/plain", "posted");
      });
      s.Route("GET", "/stream", [](Request, std::shared_ptr<ResponseWriter> w) {
        w->StartStream(200, "text/event-stream");
        w->Write("data: one\n\n");
        w->Write("data: two\n\n");
        w->End();
      });
      s.Route("GET", "/both", [](Request, std::shared_ptr<ResponseWriter> w) {
        w->Send(200, "text/plain", "from get");
      });
      s.Route("HEAD", "/both", [](Request, std::shared_ptr<ResponseWriter> w) {
        Headers h;
        h.Add("X-From", "head-route");
        w->Send(200, "text/plain", "ignored body", h);
      });
      if (with_fallback_) {
        s.SetFallback([](Request r, std::shared_ptr<ResponseWriter> w) {
          Headers h;
          h.Add("Allow", "POST");
          w->Send(405, "application/json", "{\"error\":\"" + r.method + " not allowed\"}", h);
        });
      }
    };
  }

  // The first response's head (through the blank line) and what follows it.
  static std::pair<std::string, std::string> SplitFirstHead(const std::string& got) {
    size_t end = got.find("\r\n\r\n");
    if (end == std::string::npos) return {got, ""};
    return {got.substr(0, end + 4), got.substr(end + 4)};
  }

  // Calls of the GET /thing handler by the method it was told (set on the server thread).
  std::atomic<int> head_calls_{0};
  std::atomic<int> get_calls_{0};
  bool with_fallback_ = false;
};

// What GET /thing sends, byte for byte, on a connection the client closes with it.
constexpr std::string_view kGetThing =
    "GET /thing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

TEST_F(HttpHeadTest, HeadOnGetRouteHasGetHeadersAndNoBodyThenGetIsIntact) {
  StartServer();
  // Pipelined HEAD then GET on one kept-alive connection.
  std::string got = RawExchange("HEAD /thing HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(kGetThing));
  auto [head, rest] = SplitFirstHead(got);
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(head.find("Content-Type: text/plain\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("X-Custom: yes\r\n"), std::string::npos) << head;
  // Content-Length is what GET sends (RFC 9110 section 8.6).
  EXPECT_NE(head.find("Content-Length: 12\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Connection: close"), std::string::npos) << head;  // kept alive
  // No body: the next bytes are the GET response, whole.
  EXPECT_EQ(rest.rfind("HTTP/1.1 200", 0), 0u) << got;
  auto [get_head, get_body] = SplitFirstHead(rest);
  EXPECT_NE(get_head.find("Content-Length: 12\r\n"), std::string::npos) << get_head;
  EXPECT_EQ(get_body, kBody) << got;
  // The GET handler ran for both, told the method.
  EXPECT_EQ(head_calls_, 1);
  EXPECT_EQ(get_calls_, 1);
}

TEST_F(HttpHeadTest, HeadThenGetOnOneConnectionNotPipelined) {
  StartServer();
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
  boost::asio::write(s,
                     boost::asio::buffer(std::string("HEAD /thing HTTP/1.1\r\nHost: x\r\n\r\n")));
  std::string first;
  boost::asio::read_until(s, boost::asio::dynamic_buffer(first), "\r\n\r\n");
  boost::asio::write(s, boost::asio::buffer(kGetThing));
  std::string got = first;
  boost::system::error_code ec;
  char buf[4096];
  while (!ec) {
    size_t n = s.read_some(boost::asio::buffer(buf), ec);
    got.append(buf, n);
  }
  auto [head, rest] = SplitFirstHead(got);
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(head.find("Content-Length: 12\r\n"), std::string::npos) << head;
  EXPECT_EQ(rest.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_EQ(SplitFirstHead(rest).second, kBody) << got;
}

TEST_F(HttpHeadTest, HeadErrorsCarryNoBody) {
  StartServer();
  // Unknown path (server's 404) and a path with only a POST route (404 without a
  // fallback): heads only, then GET still parses.
  std::string got = RawExchange(
      "HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n"
      "HEAD /post-only HTTP/1.1\r\nHost: x\r\n\r\n" +
      std::string(kGetThing));
  auto [h1, r1] = SplitFirstHead(got);
  EXPECT_EQ(h1.rfind("HTTP/1.1 404", 0), 0u) << got;
  EXPECT_NE(h1.find("Content-Length: "), std::string::npos) << h1;
  auto [h2, r2] = SplitFirstHead(r1);
  EXPECT_EQ(h2.rfind("HTTP/1.1 404", 0), 0u) << got;
  EXPECT_EQ(r2.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_EQ(SplitFirstHead(r2).second, kBody) << got;
}

TEST_F(HttpHeadTest, FallbackAnswerToHeadCarriesNoBody) {
  with_fallback_ = true;
  StartServer();
  std::string got =
      RawExchange("HEAD /post-only HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(kGetThing));
  auto [head, rest] = SplitFirstHead(got);
  EXPECT_EQ(head.rfind("HTTP/1.1 405", 0), 0u) << got;
  EXPECT_NE(head.find("Allow: POST\r\n"), std::string::npos) << head;
  // The fallback's body would be {"error":"HEAD not allowed"} (28 bytes).
  EXPECT_NE(head.find("Content-Length: 28\r\n"), std::string::npos) << head;
  EXPECT_EQ(rest.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_EQ(SplitFirstHead(rest).second, kBody) << got;
}

TEST_F(HttpHeadTest, OversizedHeadRequestGets413HeadOnly) {
  ServerOptions o;
  o.max_body_bytes = 4;
  StartServer(o);
  std::string got = RawExchange("HEAD /thing HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" +
                                std::string(100, 'x'));
  auto [head, rest] = SplitFirstHead(got);
  EXPECT_EQ(head.rfind("HTTP/1.1 413", 0), 0u) << got;
  EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos) << head;
  EXPECT_EQ(rest, "") << got;
}

TEST_F(HttpHeadTest, HeadOnStreamingGetRouteSendsNoChunks) {
  StartServer();
  std::string got =
      RawExchange("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(kGetThing));
  auto [head, rest] = SplitFirstHead(got);
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(head.find("Content-Type: text/event-stream\r\n"), std::string::npos) << head;
  EXPECT_EQ(rest.rfind("HTTP/1.1 200", 0), 0u) << got;  // no chunk, no zero chunk
  EXPECT_EQ(SplitFirstHead(rest).second, kBody) << got;
}

TEST_F(HttpHeadTest, HeadRouteWinsOverGetRoute) {
  StartServer();
  std::string got = RawExchange("HEAD /both HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  auto [head, rest] = SplitFirstHead(got);
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(head.find("X-From: head-route\r\n"), std::string::npos) << head;
  EXPECT_EQ(rest, "") << got;
}

}  // namespace
}  // namespace kinference::http
