// Integration-test fixture: one `kinference engine-sim` child process per test binary
// run (each CTest test is its own run), on a free port, at a high time scale.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <memory>
#include <optional>

#include "api/sse.h"
#include "http/client.h"
#include "testing/process.h"

namespace kinference::enginesim {

inline constexpr const char* kModel = "google/gemma-3-27b-it";  // l40s-27b-fp8's model

class EngineSimTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string bin = testing::KinferenceBin();
    ASSERT_FALSE(bin.empty()) << "KINFERENCE_BIN not set";
    std::string error;
    proc_ = testing::ChildProcess::Start(
        {bin, "engine-sim", "--port", "0", "--time-scale", "1000", "--max-body-bytes", "262144"},
        "engine-sim listening on", 30, &error);
    ASSERT_NE(proc_, nullptr) << error;
    ASSERT_NE(proc_->port(), 0) << proc_->ready_line();
  }
  static void TearDownTestSuite() { proc_.reset(); }

  static http::ClientRequest Req(std::string method, std::string target, std::string body = {}) {
    http::ClientRequest r;
    r.method = std::move(method);
    r.port = proc_->port();
    r.target = std::move(target);
    r.body = std::move(body);
    return r;
  }
  static http::Response Fetch(std::string method, std::string target, std::string body = {}) {
    auto r = http::FetchSync(Req(std::move(method), std::move(target), std::move(body)));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : http::Response{};
  }
  static boost::json::value Json(const std::string& text) {
    boost::system::error_code ec;
    auto v = boost::json::parse(text, ec);
    EXPECT_FALSE(ec) << text;
    return v;
  }

  struct Stream {
    int status = 0;
    std::string content_type;
    std::vector<api::SseEvent> events;
    Status done;
  };
  // POSTs `body` and collects the SSE events. `cancel_after` > 0: cancels the call after
  // that many events.
  static Stream PostStream(const std::string& target, const std::string& body,
                           size_t cancel_after = 0) {
    boost::asio::io_context io;
    Stream s;
    api::SseParser parser;
    std::shared_ptr<http::Call> call;
    http::ClientCallbacks cb;
    cb.on_headers = [&](int status, const http::Headers& h) {
      s.status = status;
      s.content_type = h.Find("content-type");
    };
    cb.on_data = [&](std::string_view d) {
      parser.Feed(d, [&](const api::SseEvent& e) {
        // One piece may carry many events: those after the cancel are not collected.
        if (cancel_after > 0 && s.events.size() == cancel_after) return;
        s.events.push_back(e);
        if (cancel_after > 0 && s.events.size() == cancel_after) call->Cancel();
      });
    };
    cb.on_complete = [&](Status st) { s.done = st; };
    call = http::StartCall(io.get_executor(), Req("POST", target, body), cb);
    io.run();
    return s;
  }

  // Value of the first sample of `name` (with its label set prefix) in /metrics text.
  static std::optional<double> Metric(const std::string& text, const std::string& prefix) {
    size_t at = text.find("\n" + prefix);
    if (at == std::string::npos) return std::nullopt;
    size_t eol = text.find('\n', at + 1);
    std::string line = text.substr(at + 1, eol - at - 1);
    return std::stod(line.substr(line.rfind(' ') + 1));
  }

  static inline std::unique_ptr<testing::ChildProcess> proc_;
};

}  // namespace kinference::enginesim
