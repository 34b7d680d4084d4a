// Streaming responses: chunks arrive before the response ends, client cancel and
// timeouts are seen by the server as a disconnect (OnClose).
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::Ready;
using testing::ServerFixture;

class StreamTest : public ServerFixture {
 protected:
  void SetUp() override {
    setup_ = [this](Server& s) {
      s.Route("GET", "/stream", [this](Request, std::shared_ptr<ResponseWriter> w) {
        writer_ = w;
        w->OnClose([this] { closed_.set_value(); });
        Headers h;
        h.Add("Cache-Control", "no-cache");
        w->StartStream(200, "text/event-stream", h);
        w->Write("first");
      });
      // Three chunks queued by one handler: they leave in one write (with the head).
      s.Route("GET", "/burst", [this](Request, std::shared_ptr<ResponseWriter> w) {
        writer_ = w;
        w->StartStream(200, "text/event-stream");
        for (const char* piece : {"one ", "two ", "three"}) w->Write(piece);
      });
    };
  }
  std::shared_ptr<ResponseWriter> writer_;  // touched on the server thread only
  std::promise<void> closed_;
};

TEST_F(StreamTest, ChunksArriveBeforeTheResponseEnds) {
  StartServer();
  boost::asio::io_context cio;
  std::vector<std::string> pieces;
  std::string content_type;
  std::optional<Status> done;
  ClientCallbacks cb;
  cb.on_headers = [&](int status, const Headers& h) {
    EXPECT_EQ(status, 200);
    content_type = h.Find("Content-Type");
  };
  cb.on_data = [&](std::string_view d) {
    pieces.emplace_back(d);
    if (pieces.size() == 1) {
      // The server writes the rest only after the client has seen the first chunk.
      EXPECT_EQ(pieces[0], "first");
      boost::asio::post(io_, [this] {
        writer_->Write("second");
        writer_->End();
      });
    }
  };
  cb.on_complete = [&](Status s) { done = s; };
  StartCall(cio.get_executor(), Req("GET", "/stream"), cb);
  cio.run();
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok()) << done->message();
  EXPECT_EQ(content_type, "text/event-stream");
  std::string all;
  for (auto& p : pieces) all += p;
  EXPECT_EQ(all, "firstsecond");
  // A stream that ended normally does not report a close.
  auto fut = closed_.get_future();
  EXPECT_EQ(fut.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
}

// Chunks that arrived together are all handed over before the next one arrives: the
// client does not wait for more bytes to deliver what it has (a token is not held back).
TEST_F(StreamTest, ChunksThatArriveTogetherAreDeliveredWithoutWaitingForMore) {
  StartServer();
  boost::asio::io_context cio;
  std::string data;
  bool ended = false;
  std::optional<Status> done;
  ClientCallbacks cb;
  cb.on_data = [&](std::string_view d) {
    data.append(d);
    if (data == "one two three" && !ended) {
      ended = true;  // the server sends its last chunk only now
      boost::asio::post(io_, [this] {
        writer_->Write("!");
        writer_->End();
      });
    }
  };
  cb.on_complete = [&](Status s) { done = s; };
  StartCall(cio.get_executor(), Req("GET", "/burst"), cb);
  cio.run();
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->ok()) << done->message();
  EXPECT_EQ(data, "one two three!");
}

TEST_F(StreamTest, ClientCancelFiresServerOnClose) {
  StartServer();
  boost::asio::io_context cio;
  std::optional<Status> done;
  int completions = 0;
  std::shared_ptr<Call> call;
  ClientCallbacks cb;
  cb.on_data = [&](std::string_view) { call->Cancel(); };
  cb.on_complete = [&](Status s) {
    done = s;
    ++completions;
  };
  call = StartCall(cio.get_executor(), Req("GET", "/stream"), cb);
  cio.run();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->code(), ErrorCode::kCancelled);
  EXPECT_EQ(completions, 1);
  auto fut = closed_.get_future();
  ASSERT_TRUE(Ready(fut));
  std::promise<bool> is_closed;
  boost::asio::post(io_, [&] { is_closed.set_value(writer_->closed()); });
  EXPECT_TRUE(is_closed.get_future().get());
}

TEST_F(StreamTest, IdleTimeoutIsDeadlineExceededAndClosesUpstream) {
  StartServer();
  ClientRequest req = Req("GET", "/stream");
  req.idle_timeout_s = 0.2;
  boost::asio::io_context cio;
  std::optional<Status> done;
  std::string data;
  ClientCallbacks cb;
  cb.on_data = [&](std::string_view d) { data.append(d); };
  cb.on_complete = [&](Status s) { done = s; };
  StartCall(cio.get_executor(), req, cb);
  cio.run();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->code(), ErrorCode::kDeadlineExceeded) << done->message();
  EXPECT_EQ(data, "first");
  auto fut = closed_.get_future();
  EXPECT_TRUE(Ready(fut));
}

TEST_F(StreamTest, ServerStopClosesStreamsAndTellsBothSides) {
  StartServer();
  boost::asio::io_context cio;
  std::optional<Status> done;
  ClientCallbacks cb;
  cb.on_data = [&](std::string_view) { boost::asio::post(io_, [this] { server_->Stop(); }); };
  cb.on_complete = [&](Status s) { done = s; };
  StartCall(cio.get_executor(), Req("GET", "/stream"), cb);
  cio.run();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->code(), ErrorCode::kUnavailable) << done->message();
  auto fut = closed_.get_future();
  EXPECT_TRUE(Ready(fut));
}

TEST_F(StreamTest, CancelBeforeConnectCompletesOnce) {
  StartServer();
  boost::asio::io_context cio;
  int completions = 0;
  std::optional<Status> done;
  ClientCallbacks cb;
  cb.on_data = [&](std::string_view) { ADD_FAILURE() << "data after cancel"; };
  cb.on_complete = [&](Status s) {
    done = s;
    ++completions;
  };
  auto call = StartCall(cio.get_executor(), Req("GET", "/stream"), cb);
  call->Cancel();
  cio.run();
  EXPECT_EQ(completions, 1);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->code(), ErrorCode::kCancelled);
}

}  // namespace
}  // namespace kinference::http
