// ClientRequest::total_timeout_s: a deadline for the whole call that a stream which keeps
// sending (so the idle timeout never fires) or a server that never answers still hits;
// kDeadlineExceeded, and the server sees the client leave. 0 leaves calls unbounded.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::Ready;
using testing::ServerFixture;

class TotalTimeoutTest : public ServerFixture {
 protected:
  void SetUp() override {
    setup_ = [this](Server& s) {
      // Headers at once, then a chunk every 50 ms, `ticks` of them, then the end.
      s.Route("GET", "/trickle", [this](Request, std::shared_ptr<ResponseWriter> w) {
        w->OnClose([this] { closed_.set_value(); });
        w->StartStream(200, "text/plain");
        w->Write("0");
        Tick(std::move(w), std::make_shared<boost::asio::steady_timer>(io_), 1);
      });
      // Never answers (until the client leaves).
      s.Route("GET", "/silent", [this](Request, std::shared_ptr<ResponseWriter> w) {
        w->OnClose([this] { closed_.set_value(); });
        held_ = std::move(w);
      });
    };
  }
  void Tick(std::shared_ptr<ResponseWriter> w, std::shared_ptr<boost::asio::steady_timer> t,
            int n) {
    t->expires_after(std::chrono::milliseconds(50));
    t->async_wait([this, w, t, n](boost::system::error_code ec) {
      if (ec || w->closed()) return;
      if (n >= ticks_) return w->End();
      w->Write("x");
      Tick(w, t, n + 1);
    });
  }
  // Runs the call to completion; `elapsed_s` is its wall time.
  Status Run(ClientRequest req, std::string* data, double* elapsed_s) {
    boost::asio::io_context cio;
    std::optional<Status> done;
    ClientCallbacks cb;
    cb.on_data = [&](std::string_view d) { data->append(d); };
    cb.on_complete = [&](Status s) { done = s; };
    auto start = std::chrono::steady_clock::now();
    StartCall(cio.get_executor(), std::move(req), cb);
    cio.run();
    *elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return done.value_or(Status(ErrorCode::kInternal, "no completion"));
  }

  int ticks_ = 1000;                      // 50 s: far beyond any deadline below
  std::shared_ptr<ResponseWriter> held_;  // server thread only
  std::promise<void> closed_;
};

TEST_F(TotalTimeoutTest, BoundsAStreamThatNeverGoesIdle) {
  StartServer();
  ClientRequest req = Req("GET", "/trickle");
  req.header_timeout_s = 5;
  req.idle_timeout_s = 5;
  req.total_timeout_s = 0.4;
  std::string data;
  double elapsed = 0;
  Status s = Run(req, &data, &elapsed);
  EXPECT_EQ(s.code(), ErrorCode::kDeadlineExceeded) << s.message();
  EXPECT_NE(s.message().find("timed out (read body)"), std::string::npos) << s.message();
  EXPECT_GE(elapsed, 0.35);
  EXPECT_LT(elapsed, 3.0);
  EXPECT_GT(data.size(), 2u);  // the body kept coming until the deadline
  auto fut = closed_.get_future();
  EXPECT_TRUE(Ready(fut));  // the server saw the client leave (vLLM aborts the request)
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the ticker notices it
}

TEST_F(TotalTimeoutTest, BoundsTheWaitForHeaders) {
  StartServer();
  ClientRequest req = Req("GET", "/silent");
  req.total_timeout_s = 0.3;
  std::string data;
  double elapsed = 0;
  Status s = Run(req, &data, &elapsed);
  EXPECT_EQ(s.code(), ErrorCode::kDeadlineExceeded) << s.message();
  EXPECT_NE(s.message().find("timed out (read header)"), std::string::npos) << s.message();
  EXPECT_LT(elapsed, 3.0);
  auto fut = closed_.get_future();
  EXPECT_TRUE(Ready(fut));
}

TEST_F(TotalTimeoutTest, ZeroOrALongerDeadlineLetsTheCallFinish) {
  ticks_ = 10;  // ~0.5 s
  StartServer();
  for (double total : {0.0, 10.0}) {
    ClientRequest req = Req("GET", "/trickle");
    req.idle_timeout_s = 5;
    req.total_timeout_s = total;
    std::string data;
    double elapsed = 0;
    Status s = Run(req, &data, &elapsed);
    EXPECT_TRUE(s.ok()) << total << ": " << s.message();
    EXPECT_EQ(data, "0xxxxxxxxx") << total;
  }
}

}  // namespace
}  // namespace kinference::http
