#include "gateway/upstream/http_classifier.h"

#include <fmt/format.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <memory>

#include "http/client.h"

namespace kinference::gateway {
namespace {

// 1 MiB: a tag list is a few hundred bytes; a larger answer is not a classifier's.
constexpr size_t kMaxResponseBytes = 1 << 20;

struct PendingCall {
  explicit PendingCall(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
  boost::asio::steady_timer timer;
  std::shared_ptr<http::Call> call;
  std::function<void(Result<std::vector<std::string>>)> done;
  int status = 0;
  std::string body;
  bool finished = false;

  void Finish(Result<std::vector<std::string>> r) {
    if (finished) return;
    finished = true;
    timer.cancel();
    auto cb = std::move(done);
    if (call) {
      auto c = std::move(call);
      c->Cancel();  // no-op when the call already completed
    }
    cb(std::move(r));
  }
};

}  // namespace

Result<std::vector<std::string>> ParseClassifierResponse(std::string_view body) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return Status(ErrorCode::kUnavailable, "classifier: malformed JSON");
  const auto* tags = v.as_object().if_contains("tags");
  if (!tags || !tags->is_array()) {
    return Status(ErrorCode::kUnavailable, "classifier: response has no `tags` array");
  }
  std::vector<std::string> out;
  for (const auto& t : tags->as_array()) {
    if (!t.is_string()) return Status(ErrorCode::kUnavailable, "classifier: non-string tag");
    for (auto& tag : policy::ParseTagHeader(std::string_view(t.as_string()))) {
      out.push_back(std::move(tag));
    }
  }
  return out;
}

HttpClassifier::HttpClassifier(boost::asio::any_io_executor executor, ClassifierConfig config)
    : executor_(std::move(executor)), config_(std::move(config)) {}

void HttpClassifier::Classify(std::string text, Seconds timeout_s,
                              std::function<void(Result<std::vector<std::string>>)> done) {
  auto pending = std::make_shared<PendingCall>(executor_);
  pending->done = std::move(done);
  http::ClientRequest req;
  req.method = "POST";
  req.host = config_.host;
  req.port = config_.port;
  req.tls = config_.tls;
  req.target = config_.path;
  req.body = boost::json::serialize(boost::json::object{{"text", std::move(text)}});
  req.connect_timeout_s = timeout_s;
  req.header_timeout_s = timeout_s;
  req.idle_timeout_s = timeout_s;
  pending->timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(timeout_s)));
  pending->timer.async_wait([pending, timeout_s](boost::system::error_code ec) {
    if (ec) return;
    pending->Finish(Status(ErrorCode::kDeadlineExceeded,
                           fmt::format("classifier: no answer in {} s", timeout_s)));
  });
  http::ClientCallbacks cb;
  cb.on_headers = [pending](int status, const http::Headers&) { pending->status = status; };
  cb.on_data = [pending](std::string_view d) {
    if (pending->body.size() + d.size() <= kMaxResponseBytes) pending->body.append(d);
  };
  cb.on_complete = [pending](Status s) {
    pending->call.reset();
    if (pending->finished) return;
    if (!s.ok()) return pending->Finish(Status(s.code(), "classifier: " + s.message()));
    if (pending->status != 200) {
      return pending->Finish(Status(ErrorCode::kUnavailable,
                                    "classifier: answered " + std::to_string(pending->status)));
    }
    pending->Finish(ParseClassifierResponse(pending->body));
  };
  auto call = http::StartCall(executor_, std::move(req), std::move(cb));
  if (!pending->finished) pending->call = std::move(call);
}

}  // namespace kinference::gateway
