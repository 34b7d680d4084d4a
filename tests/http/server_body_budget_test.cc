// ServerOptions::max_buffered_body_bytes: the request-body bytes held at once across all
// connections. A body that does not fit is refused (503, Retry-After, the path's error
// shape and status) before it is read; small bodies pass anyway; held bytes return when
// the response ends, the client leaves mid-body or the body times out.
#include <gtest/gtest.h>

#include <atomic>

#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::ServerFixture;
using tcp = boost::asio::ip::tcp;

constexpr size_t kBudget = 1 << 20;  // 1 MiB
constexpr size_t kLarge = 800 * 1024;

class BodyBudgetTest : public ServerFixture {
 protected:
  // Routes: POST /up answers 200 with the body's size; POST /hold keeps its writer until
  // Answer() (the handler is not done with the request yet).
  void Start(ServerOptions o = {}) {
    setup_ = [this](Server& s) {
      auto up = [this](Request r, std::shared_ptr<ResponseWriter> w) {
        ++handled_;
        w->Send(200, "text/plain", std::to_string(r.body.size()));
      };
      s.Route("POST", "/up", up);
      s.Route("POST", "/v1/messages", up);
      s.Route("POST", "/hold", [this](Request, std::shared_ptr<ResponseWriter> w) {
        ++handled_;
        held_ = std::move(w);
      });
    };
    o.max_buffered_body_bytes = kBudget;
    StartServer(o);
  }
  // Answers the request /hold kept (once its handler has run).
  void Answer() {
    for (int i = 0; i < 2000 && handled_.load() == 0; ++i)  // hang guard, not a timing check
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(handled_.load(), 1);
    boost::asio::post(io_, [this] {
      held_->Send(200, "text/plain", "done");
      held_.reset();
    });
  }
  size_t Buffered() {
    std::promise<size_t> p;
    auto f = p.get_future();
    boost::asio::post(io_, [&] { p.set_value(server_->BufferedBodyBytes()); });
    return f.get();
  }
  // Polls until the server holds `bytes` of bodies (a hang guard bounds it, not a timing
  // assertion).
  bool WaitBuffered(size_t bytes) {
    for (int i = 0; i < 2000; ++i) {
      if (Buffered() == bytes) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Buffered() == bytes;
  }
  // A connection that sent a header announcing `length` body bytes and `sent` of them.
  std::unique_ptr<tcp::socket> Partial(const std::string& path, size_t length, size_t sent) {
    auto s = std::make_unique<tcp::socket>(client_io_);
    s->connect({boost::asio::ip::make_address("127.0.0.1"), port_});
    std::string bytes = "POST " + path +
                        " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(length) +
                        "\r\n\r\n" + std::string(sent, 'x');
    boost::asio::write(*s, boost::asio::buffer(bytes));
    return s;
  }
  std::string PostWhole(const std::string& path, size_t length) {
    return RawExchange("POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                       "Content-Length: " + std::to_string(length) + "\r\n\r\n" +
                       std::string(length, 'y'));
  }

  boost::asio::io_context client_io_;
  std::atomic<int> handled_{0};
  std::shared_ptr<ResponseWriter> held_;  // on the server's io thread
};

// A second large body that does not fit beside one being received is refused on its
// header (503, Retry-After, OpenAI shape; no 100 Continue), and its handler never runs.
TEST_F(BodyBudgetTest, LargeBodyThatDoesNotFitIsRefusedBeforeItIsRead) {
  Start();
  auto first = Partial("/up", kLarge, 1000);
  ASSERT_TRUE(WaitBuffered(kLarge));
  std::string got = RawExchange(
      "POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
      "Content-Length: " +
      std::to_string(kLarge) + "\r\n\r\n");
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_NE(got.find("Retry-After: " + std::to_string(kBodyBudgetRetryAfterS)), std::string::npos)
      << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_NE(got.find(R"("type":"service_unavailable_error")"), std::string::npos) << got;
  EXPECT_EQ(got.find("100 Continue"), std::string::npos) << got;
  EXPECT_EQ(handled_.load(), 0);
  EXPECT_EQ(Buffered(), kLarge);  // the refused one took nothing
}

// The refusal goes through error_status, error_body and error_headers, so each API's
// path gets its own status and shape (the gateway's 529 on /v1/messages).
TEST_F(BodyBudgetTest, RefusalTakesThePathsErrorStatusAndShape) {
  ServerOptions o;
  o.error_status = [](std::string_view path, const Status& s) {
    return path == "/v1/messages" && s.code() == ErrorCode::kUnavailable ? 529
                                                                         : HttpStatusFor(s.code());
  };
  o.error_body = [](std::string_view path, const Status& s, int) {
    return std::string(R"({"path":")") + std::string(path) + R"(","msg":")" + s.message() + "\"}";
  };
  o.error_headers = [](const Headers& h) {
    Headers out;
    out.Add("x-request-id", std::string(h.Find("x-request-id")));
    return out;
  };
  Start(o);
  auto first = Partial("/up", kBudget, 0);
  ASSERT_TRUE(WaitBuffered(kBudget));
  std::string got = RawExchange(
      "POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nx-request-id: r-1\r\n"
      "Content-Length: 100000\r\n\r\n");
  EXPECT_NE(got.find("HTTP/1.1 529"), std::string::npos) << got;
  EXPECT_NE(got.find(R"({"path":"/v1/messages","msg":"The server is receiving too many)"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("x-request-id: r-1"), std::string::npos) << got;
  EXPECT_NE(got.find("Retry-After: "), std::string::npos) << got;
}

// Small bodies (at most 64 KiB) pass while large ones fill the budget.
TEST_F(BodyBudgetTest, SmallBodiesPassWhileTheBudgetIsFull) {
  Start();
  auto first = Partial("/up", kBudget, 1000);
  ASSERT_TRUE(WaitBuffered(kBudget));
  std::string got = PostWhole("/up", 1000);
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
  got = PostWhole("/up", 64 * 1024);
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
  got = PostWhole("/up", 64 * 1024 + 1);
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_TRUE(WaitBuffered(kBudget));  // the small ones returned theirs
}

// A body's bytes stay held while its handler still has the request and return when the
// response ends; then the next large body is read.
TEST_F(BodyBudgetTest, BytesReturnWhenTheResponseEnds) {
  Start();
  tcp::socket s(client_io_);
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
  std::string req = "POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(kLarge) +
                    "\r\n\r\n" + std::string(kLarge, 'z');
  boost::asio::write(s, boost::asio::buffer(req));
  ASSERT_TRUE(WaitBuffered(kLarge));
  std::string got = PostWhole("/up", kLarge);
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  Answer();
  char buf[512];
  size_t n = s.read_some(boost::asio::buffer(buf));
  EXPECT_NE(std::string(buf, n).find("200 OK"), std::string::npos);
  EXPECT_TRUE(WaitBuffered(0));
  got = PostWhole("/up", kLarge);
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
  EXPECT_NE(got.find(std::to_string(kLarge)), std::string::npos) << got;
  EXPECT_TRUE(WaitBuffered(0));
}

// A client that leaves mid-body returns its share.
TEST_F(BodyBudgetTest, BytesReturnWhenTheClientLeavesMidBody) {
  Start();
  auto first = Partial("/up", kLarge, 300 * 1024);
  ASSERT_TRUE(WaitBuffered(kLarge));
  first->close();
  EXPECT_TRUE(WaitBuffered(0));
  std::string got = PostWhole("/up", kLarge);
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
}

// A body that stops arriving is dropped at body_timeout_s and returns its share.
TEST_F(BodyBudgetTest, BytesReturnWhenTheBodyTimesOut) {
  ServerOptions o;
  o.body_timeout_s = 0.3;
  Start(o);
  auto first = Partial("/up", kLarge, 1000);
  ::kinference::testing::ReadUntil(*first);  // the server closes it at the timeout
  EXPECT_TRUE(WaitBuffered(0));
  std::string got = PostWhole("/up", kLarge);
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
  EXPECT_EQ(handled_.load(), 1);
}

// A chunked body (size unknown on its header) is counted as it arrives and refused once
// it grows past what is left; one within the budget is read and its share returned.
TEST_F(BodyBudgetTest, ChunkedBodyGrowingPastTheBudgetIsRefused) {
  Start();
  auto chunked = [](size_t chunks) {
    std::string c(64 * 1024, 'c');
    std::string bytes =
        "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    for (size_t i = 0; i < chunks; ++i) bytes += "10000\r\n" + c + "\r\n";
    return bytes + "0\r\n\r\n";
  };
  std::string got = RawExchange(chunked(8));  // 512 KiB
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
  EXPECT_NE(got.find(std::to_string(512 * 1024)), std::string::npos) << got;
  EXPECT_TRUE(WaitBuffered(0));
  auto first = Partial("/up", kLarge, 0);
  ASSERT_TRUE(WaitBuffered(kLarge));
  // 512 KiB > the 224 KiB left; read until the error's body (the server drains the rest).
  got = RawExchange(chunked(8), "service_unavailable_error");
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_NE(got.find("Retry-After: "), std::string::npos) << got;
  EXPECT_EQ(handled_.load(), 1);
  EXPECT_TRUE(WaitBuffered(kLarge));
}

// Without a limit nothing is refused, and the bytes are still counted and returned.
TEST_F(BodyBudgetTest, NoLimitCountsButNeverRefuses) {
  setup_ = [](Server& s) {
    s.Route("POST", "/up", [](Request r, std::shared_ptr<ResponseWriter> w) {
      w->Send(200, "text/plain", std::to_string(r.body.size()));
    });
  };
  StartServer();
  auto first = Partial("/up", 4 * kBudget, 0);
  ASSERT_TRUE(WaitBuffered(4 * kBudget));
  std::string got = PostWhole("/up", 2 * kBudget);
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
  first->close();
  EXPECT_TRUE(WaitBuffered(0));
}

}  // namespace
}  // namespace kinference::http
