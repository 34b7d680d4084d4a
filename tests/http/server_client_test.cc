// Server and client on loopback: whole responses, keep-alive, error statuses.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::ServerFixture;

class HttpTest : public ServerFixture {
 protected:
  void SetUp() override {
    setup_ = [](Server& s) {
      s.Route("POST", "/echo", [](Request r, std::shared_ptr<ResponseWriter> w) {
        Headers h;
        h.Add("X-Path", r.path);
        h.Add("X-Target", r.target);
        h.Add("X-Got-Type", std::string(r.headers.Find("content-type")));
        w->Send(200, "text/plain", r.body, h);
      });
      s.Route("GET", "/drop", [](Request, std::shared_ptr<ResponseWriter>) {});
    };
  }
};

TEST_F(HttpTest, RoundTrip) {
  StartServer();
  auto r = FetchSync(Req("POST", "/echo?x=1", "hello"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->headers.Find("content-type"), "text/plain");
  EXPECT_EQ(r->headers.Find("X-PATH"), "/echo");
  EXPECT_EQ(r->headers.Find("x-target"), "/echo?x=1");
  EXPECT_EQ(r->headers.Find("x-got-type"), "application/json");
}

TEST_F(HttpTest, LargeBodyRoundTrip) {
  StartServer();
  std::string body(3 * 1024 * 1024 + 17, 'z');
  for (size_t i = 0; i < body.size(); i += 1000) body[i] = static_cast<char>('a' + i % 26);
  auto r = FetchSync(Req("POST", "/echo", body));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, body);
}

TEST_F(HttpTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  StartServer();
  std::string one = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
  std::string two =
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\ndef";
  // Pipelined: both requests in one write, answered in order on the same connection.
  std::string got = RawExchange(one + two);
  size_t a = got.find("\r\n\r\nabc");
  size_t b = got.find("\r\n\r\ndef");
  ASSERT_NE(a, std::string::npos) << got;
  ASSERT_NE(b, std::string::npos) << got;
  EXPECT_LT(a, b);
  EXPECT_NE(got.find("Connection: close"), std::string::npos);
}

TEST_F(HttpTest, UnknownPathIs404WithOpenAiError) {
  StartServer();
  auto r = FetchSync(Req("GET", "/nope"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  auto j = boost::json::parse(r->body);
  EXPECT_EQ(j.at("error").at("code").as_int64(), 404);
  EXPECT_TRUE(j.at("error").at("message").is_string());
}

TEST_F(HttpTest, WrongMethodFallsBack) {
  setup_ = [](Server& s) {
    s.Route("POST", "/only-post",
            [](Request, std::shared_ptr<ResponseWriter> w) { w->Send(200, "text/plain", "post"); });
    s.SetFallback([](Request r, std::shared_ptr<ResponseWriter> w) {
      w->Send(418, "text/plain", "fallback " + r.method + " " + r.path);
    });
  };
  StartServer();
  auto r = FetchSync(Req("GET", "/only-post"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 418);
  EXPECT_EQ(r->body, "fallback GET /only-post");
}

TEST_F(HttpTest, OversizedBodyIs413) {
  ServerOptions o;
  o.max_body_bytes = 1024;
  StartServer(o);
  auto ok = FetchSync(Req("POST", "/echo", std::string(1024, 'a')));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
  auto r = FetchSync(Req("POST", "/echo", std::string(64 * 1024, 'a')));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 413);
  auto j = boost::json::parse(r->body);
  EXPECT_EQ(j.at("error").at("code").as_int64(), 413);
}

TEST_F(HttpTest, ChunkedRequestBodyOverLimitIs413) {
  ServerOptions o;
  o.max_body_bytes = 8;
  StartServer(o);
  std::string got = RawExchange(
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "10\r\n0123456789abcdef\r\n0\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << got;
}

TEST_F(HttpTest, MalformedRequestIs400) {
  StartServer();
  std::string got = RawExchange("THIS IS NOT HTTP\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
  EXPECT_NE(got.find("\"code\":400"), std::string::npos) << got;
  // The server is still serving.
  auto r = FetchSync(Req("POST", "/echo", "still"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "still");
}

TEST_F(HttpTest, BadContentLengthIs400) {
  StartServer();
  std::string got = RawExchange("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
}

TEST_F(HttpTest, ExpectContinueGets100) {
  StartServer();
  std::string got = RawExchange(
      "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n"
      "Connection: close\r\n\r\nhi");
  EXPECT_EQ(got.rfind("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(got.find("\r\n\r\nhi"), std::string::npos);
}

TEST_F(HttpTest, IdleKeepAliveConnectionIsClosed) {
  ServerOptions o;
  o.keep_alive_timeout_s = 0.1;
  StartServer(o);
  // One request, then silence: the server answers, then closes the idle connection
  // (RawExchange reads until the server closes).
  std::string got = RawExchange("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok");
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_EQ(got.find("Connection: close"), std::string::npos);  // it was kept alive
  EXPECT_NE(got.find("\r\n\r\nok"), std::string::npos);
}

TEST_F(HttpTest, StalledBodyConnectionIsClosed) {
  ServerOptions o;
  o.body_timeout_s = 0.1;
  StartServer(o);
  // Header promises 1000 bytes, 8 arrive, then silence: the server must drop the
  // connection (RawExchange returns when it does) without answering or dispatching.
  std::string got =
      RawExchange("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n12345678");
  EXPECT_EQ(got, "");
  // The server still serves others.
  auto r = FetchSync(Req("POST", "/echo", "fine"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, "fine");
}

TEST_F(HttpTest, DroppedWriterAnswers500) {
  StartServer();
  auto r = FetchSync(Req("GET", "/drop"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
}

TEST_F(HttpTest, ConnectRefusedIsUnavailable) {
  StartServer();
  uint16_t closed_port;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    closed_port = a.local_endpoint().port();
  }
  ClientRequest req = Req("GET", "/");
  req.port = closed_port;
  auto r = FetchSync(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
}

TEST(ParseHostPort, Forms) {
  auto a = ParseHostPort("http://10.0.0.5:8000/v1");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "10.0.0.5");
  EXPECT_EQ(a->second, 8000);
  auto b = ParseHostPort("localhost:9");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, "localhost");
  EXPECT_EQ(b->second, 9);
  auto c = ParseHostPort("http://vllm");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->second, 80);
  auto d = ParseHostPort("http://[::1]:8080");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->first, "::1");
  EXPECT_EQ(d->second, 8080);
  EXPECT_FALSE(ParseHostPort("https://x:1").ok());
  EXPECT_FALSE(ParseHostPort("http://x:0").ok());
  EXPECT_FALSE(ParseHostPort("http://x:99999").ok());
  EXPECT_FALSE(ParseHostPort("http://x:8a").ok());
  EXPECT_FALSE(ParseHostPort("http://:80").ok());
}

}  // namespace
}  // namespace kinference::http
