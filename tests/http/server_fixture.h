// Test fixture: an http::Server on its own io_context thread, plus raw-socket helpers
// for sending bytes no well-behaved client would send.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <future>
#include <optional>
#include <thread>

#include "http/client.h"
#include "http/server.h"
#include "testing/wire.h"

namespace kinference::http::testing {

class ServerFixture : public ::testing::Test {
 protected:
  // Call from the test body after adding routes via `server()`.
  void StartServer(ServerOptions options = {}) {
    server_.emplace(io_, options);
    if (setup_) setup_(*server_);
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().message();
    port_ = *port;
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    if (server_) {
      boost::asio::post(io_, [this] { server_->Stop(); });
    }
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }

  ClientRequest Req(std::string method, std::string target, std::string body = {}) {
    ClientRequest r;
    r.method = std::move(method);
    r.port = port_;
    r.target = std::move(target);
    r.body = std::move(body);
    return r;
  }

  // Sends `bytes` on a fresh connection, then reads until the server closes or
  // `until` appears in what was read (testing/wire.h).
  std::string RawExchange(const std::string& bytes, const std::string& until = {}) {
    return ::kinference::testing::RawExchange(port_, bytes, until);
  }

  // ServerOptions::error_headers for tests of the server's own errors: the request's
  // x-request-id echoed, "made-here" when it had none.
  static Headers EchoRequestId(const Headers& request_headers) {
    Headers out;
    std::string_view given = request_headers.Find("x-request-id");
    out.Add("x-request-id", given.empty() ? "made-here" : std::string(given));
    return out;
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      io_.get_executor()};
  std::function<void(Server&)> setup_;
  std::optional<Server> server_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// Waits for a future with a generous bound (a hang guard, not a timing assertion).
template <typename T>
bool Ready(std::future<T>& f) {
  return f.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
}

}  // namespace kinference::http::testing
