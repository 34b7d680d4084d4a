#include "fake_upstream.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include "api/sse.h"

namespace kinference::gateway::testing {
namespace json = boost::json;
using boost::asio::ip::tcp;

namespace {

std::string Chunk(const std::string& delta_json, const std::string& finish = "null") {
  return R"({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":)" +
         delta_json + R"(,"finish_reason":)" + finish + "}]}";
}

const char* kUsage =
    R"({"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}})";

}  // namespace

FakeUpstream::FakeUpstream(boost::asio::io_context& io, FakeMode mode, uint16_t port)
    : mode_(mode) {
  http::ServerOptions options;
  options.port = port;
  server_ = std::make_unique<http::Server>(io, options);
  auto handler = [this](http::Request r, std::shared_ptr<http::ResponseWriter> w) {
    Handle(std::move(r), std::move(w));
  };
  server_->Route("POST", "/v1/chat/completions", handler);
  server_->Route("POST", "/v1/completions", handler);
  server_->Route("GET", "/metrics", [this](http::Request, auto w) {
    if (!metrics_.empty()) return w->Send(200, "text/plain", metrics_);
    w->Send(200, "text/plain",
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running{model_name=\"m\"} 0\n"
            "# TYPE vllm:num_requests_waiting gauge\n"
            "vllm:num_requests_waiting{model_name=\"m\"} " +
                std::to_string(waiting_.load()) + "\n");
  });
  auto bound = server_->Start();
  port_ = bound.ok() ? *bound : 0;
}

std::vector<std::string> FakeUpstream::bodies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bodies_;
}

void FakeUpstream::Handle(http::Request r, std::shared_ptr<http::ResponseWriter> w) {
  ++requests_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bodies_.push_back(r.body);
  }
  if (mode_ == FakeMode::kUnauthorized) {
    w->Send(401, "application/json", R"({"error":"Unauthorized"})");
    return;
  }
  if (mode_ == FakeMode::kFail500) {
    w->Send(500, "application/json", R"({"error":{"message":"boom","type":"internal_error"}})");
    return;
  }
  json::object body = json::parse(r.body).as_object();
  bool stream = body.contains("stream") && body.at("stream").as_bool();
  bool usage = false;
  if (auto* so = body.if_contains("stream_options"); so && so->is_object()) {
    auto* iu = so->as_object().if_contains("include_usage");
    usage = iu && iu->as_bool();
  }
  if (!stream) {
    w->Send(200, "application/json",
            std::string(R"({"id":"chatcmpl-1","object":"chat.completion","model":"m",)") +
                R"("choices":[{"index":0,"message":{"role":"assistant","content":" a b c"},)" +
                R"("finish_reason":"stop"}],"usage":)" + kUsage + "}");
    return;
  }
  w->StartStream(200, "text/event-stream");
  w->Write(api::FormatSse(Chunk(R"({"role":"assistant","content":""})")));
  w->Write(api::FormatSse(Chunk(R"({"content":" a"})")));
  if (mode_ == FakeMode::kHang) {
    auto counter = closed_counter_;
    w->OnClose([counter] { ++*counter; });
    held_.push_back(std::move(w));  // the server holds writers weakly
    return;
  }
  w->Write(api::FormatSse(Chunk(R"({"content":" b"})")));
  w->Write(api::FormatSse(Chunk(R"({"content":" c"})")));
  w->Write(api::FormatSse(Chunk("{}", "\"stop\"")));
  if (usage) {
    w->Write(api::FormatSse(std::string(R"({"id":"chatcmpl-1","object":"chat.completion.chunk",)") +
                            R"("model":"m","choices":[],"usage":)" + kUsage + "}"));
  }
  w->Write(api::FormatSse("[DONE]"));
  w->End();
}

void FakeUpstream::FinishHeld() {
  for (auto& w : held_) {
    w->Write(api::FormatSse(Chunk(R"({"content":" b"})")));
    w->Write(api::FormatSse(Chunk("{}", "\"stop\"")));
    w->Write(api::FormatSse("[DONE]"));
    w->End();
  }
  held_.clear();
}

BreakingUpstream::BreakingUpstream(bool send_event) {
  acceptor_ = std::make_unique<tcp::acceptor>(
      io_, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  port_ = acceptor_->local_endpoint().port();
  thread_ = std::thread([this, send_event] {
    while (!stopping_) {
      boost::system::error_code ec;
      tcp::socket s(io_);
      acceptor_->accept(s, ec);
      if (ec || stopping_) return;
      std::string got;
      char buf[4096];
      while (got.find("\r\n\r\n") == std::string::npos && !ec) {
        size_t n = s.read_some(boost::asio::buffer(buf), ec);
        got.append(buf, n);
      }
      if (ec) continue;
      if (got.rfind("POST", 0) != 0) {  // e.g. the gateway's /metrics scrape
        boost::asio::write(
            s,
            boost::asio::buffer(std::string("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")),
            ec);
        continue;
      }
      ++posts_;
      std::string event = api::FormatSse(Chunk(R"({"role":"assistant","content":" a"})"));
      char size[16];
      snprintf(size, sizeof size, "%zx", event.size());
      std::string out =
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: "
          "chunked\r\n\r\n";
      if (send_event) out += std::string(size) + "\r\n" + event + "\r\n";
      boost::asio::write(s, boost::asio::buffer(out), ec);
    }  // the socket closes mid-stream here
  });
}

BreakingUpstream::~BreakingUpstream() {
  // Unblock an accept() that never got its connection: connect and hang up.
  stopping_ = true;
  boost::system::error_code ec;
  tcp::socket s(io_);
  s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_), ec);
  s.close(ec);
  if (thread_.joinable()) thread_.join();
}

uint16_t DeadPort() {
  boost::asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

}  // namespace kinference::gateway::testing
