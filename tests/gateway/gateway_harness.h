// Test harness: an in-process gateway on its own io_context thread (as in production)
// with a given config, plus blocking client helpers. Fakes that live on the same
// io_context are created through io().
//
// Also the request bodies most tests send, and Eventually, the hang guard for polling.
//
// Thread-safety: the test thread calls Start/Call/Metric; the gateway runs on thread_.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gateway/gateway.h"
#include "http/client.h"

namespace kinference::gateway::testing {

// A chat completion, the same streamed, and an Anthropic message, each asking "hello" of
// model "m" (the model the tests' pools serve).
inline const std::string kChat = R"({"model":"m","messages":[{"role":"user","content":"hello"}]})";
inline const std::string kStreamChat =
    R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]})";
inline const std::string kMessages =
    R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hello"}]})";

// Polls `pred` every 20 ms for up to 60 s: a hang guard, never a timing bound.
inline bool Eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 3000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

class GatewayHarness : public ::testing::Test {
 protected:
  void Start(const GatewayConfig& config) {
    GatewayConfig c = config;
    c.listen_port = 0;
    gateway_ = std::make_unique<Gateway>(io_, c);
    auto port = gateway_->Start();
    ASSERT_TRUE(port.ok()) << port.status().message();
    port_ = *port;
    thread_ = std::thread([this] { io_.run(); });
  }

  // Runs on the io thread before the gateway stops (e.g. stopping fakes).
  void OnStop(std::function<void()> f) { on_stop_.push_back(std::move(f)); }

  void TearDown() override {
    if (thread_.joinable()) {
      std::promise<void> stopped;
      boost::asio::post(io_, [&] {
        if (gateway_) gateway_->Stop();
        for (auto& f : on_stop_) f();
        stopped.set_value();
      });
      stopped.get_future().wait();
    }
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  http::Response Call(std::string method, std::string path, std::string body = {},
                      http::Headers headers = {}) {
    http::ClientRequest r;
    r.method = std::move(method);
    r.port = port_;
    r.target = std::move(path);
    r.body = std::move(body);
    r.headers = std::move(headers);
    r.header_timeout_s = 30;  // hang guard only
    auto res = http::FetchSync(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : http::Response{};
  }
  http::Response Post(std::string body, http::Headers headers = {},
                      std::string path = "/v1/chat/completions") {
    return Call("POST", std::move(path), std::move(body), std::move(headers));
  }
  // The value of the first exposed series starting with `series_prefix` (0 if absent).
  double Metric(const std::string& series_prefix) {
    std::string text = Call("GET", "/metrics").body;
    size_t at = text.find(series_prefix);
    if (at == std::string::npos) return 0;
    size_t sp = text.find(' ', at + series_prefix.size());
    return std::stod(text.substr(sp + 1, text.find('\n', sp) - sp - 1));
  }

  boost::asio::io_context& io() { return io_; }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      io_.get_executor()};
  std::unique_ptr<Gateway> gateway_;
  std::vector<std::function<void()>> on_stop_;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace kinference::gateway::testing
