// ResponseWriter of a server Session (see session.h).
#include <boost/asio/post.hpp>

#include "http/session.h"

namespace kinference::http::detail {

Writer::~Writer() {
  // A handler that dropped its writer without answering gets a 500, not a hung client.
  if (!started_ && !session_->closed()) {
    started_ = true;
    Status st(ErrorCode::kInternal, "The handler produced no response.");
    std::string body = session_->ErrorBody(session_->served_path(), st, 500);
    session_->Queue(FormatHead(500, "application/json", {}, keep_alive_,
                               BodyFraming::kContentLength, body.size()) +
                        body,
                    true);
  }
}

void Writer::Send(int status, std::string content_type, std::string body, Headers extra) {
  if (started_) return;
  started_ = ended_ = true;
  if (!closed_ && !session_->closed()) status_ = status;
  std::string head = FormatHead(status, content_type, extra, keep_alive_,
                                BodyFraming::kContentLength, body.size());
  session_->Queue(head + body, true);
}

void Writer::StartStream(int status, std::string content_type, Headers extra) {
  if (started_) return;
  started_ = true;
  if (!closed_ && !session_->closed()) status_ = status;
  session_->BoundSendBuffer();
  // Held until the handler returns: its first Write (the gateway's first events) goes out
  // with the head in one write.
  session_->Queue(FormatHead(status, content_type, extra, keep_alive_,
                             chunked_ ? BodyFraming::kChunked : BodyFraming::kUntilClose),
                  false, /*hold=*/true);
}

void Writer::Write(std::string data) {
  if (!started_ || ended_ || data.empty()) return;
  session_->Queue(chunked_ ? FormatChunk(data) : std::move(data), false);
}

void Writer::End() {
  if (!started_ || ended_) return;
  ended_ = true;
  session_->Queue(chunked_ ? std::string(kLastChunk) : std::string(), true);
}

void Writer::OnClose(std::function<void()> callback) {
  if (closed_ && !close_fired_ && !ended_) {
    close_fired_ = true;
    asio::post(session_->executor(), std::move(callback));
    return;
  }
  on_close_ = std::move(callback);
}

asio::any_io_executor Writer::executor() const { return session_->executor(); }

size_t Writer::pending_bytes() const { return closed_ ? 0 : session_->pending(); }

void Writer::OnWritable(size_t at_most, std::function<void()> callback) {
  if (closed_) return;
  if (session_->pending() <= at_most) {
    on_writable_ = nullptr;
    asio::post(session_->executor(), std::move(callback));
    return;
  }
  writable_at_ = at_most;
  on_writable_ = std::move(callback);
}

void Writer::Wrote(size_t pending) {
  if (!on_writable_ || pending > writable_at_) return;
  auto cb = std::move(on_writable_);
  on_writable_ = nullptr;
  cb();
}

void Writer::Abort() {
  if (closed_) return;
  closed_ = true;
  close_fired_ = true;  // the caller ended the response itself: no OnClose callback
  on_close_ = nullptr;
  on_writable_ = nullptr;
  session_->Close();
}

void Writer::ClientGone() {
  closed_ = true;
  on_writable_ = nullptr;
  if (close_fired_) return;
  close_fired_ = true;
  if (on_close_) {
    auto cb = std::move(on_close_);
    on_close_ = nullptr;
    cb();
  }
}

}  // namespace kinference::http::detail
