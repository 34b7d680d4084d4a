// Test helpers for the gateway: in-process fake vLLM upstreams (on the test's
// io_context) and a raw TCP upstream that breaks a stream mid-way.
//
// Thread-safety: FakeUpstream's handlers run on the io_context thread; its counters are
// atomics and `bodies` is guarded, so the test thread may read them.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"

namespace kinference::gateway::testing {

enum class FakeMode {
  kOk,            // answers like vLLM: streamed (role, 3 content chunks, finish, usage, [DONE])
  kFail500,       // 500 with an OpenAI error body
  kHang,          // streams the role chunk and one content chunk, then never ends
  kUnauthorized,  // 401 as vLLM started with --api-key answers a wrong key
};

class FakeUpstream {
 public:
  // port 0: any free port.
  FakeUpstream(boost::asio::io_context& io, FakeMode mode, uint16_t port = 0);
  uint16_t port() const { return port_; }
  int requests() const { return requests_; }
  int closed() const { return closed_; }  // clients that went away mid-stream
  std::vector<std::string> bodies() const;
  void Stop() { server_->Stop(); }
  // vllm:num_requests_waiting reported by GET /metrics (default 0).
  void set_waiting(int n) { waiting_ = n; }
  // GET /metrics answers `text` instead (set before the gateway starts scraping).
  void set_metrics(std::string text) { metrics_ = std::move(text); }
  // kHang: ends the held streams like kOk does (b, c, finish, [DONE]). Call on the
  // io_context thread (asio::post).
  void FinishHeld();

 private:
  void Handle(http::Request r, std::shared_ptr<http::ResponseWriter> w);

  FakeMode mode_;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<int> waiting_{0};
  std::string metrics_;  // non-empty: the /metrics body
  std::shared_ptr<std::atomic<int>> closed_counter_ = std::make_shared<std::atomic<int>>(0);
  std::atomic<int>& closed_ = *closed_counter_;
  mutable std::mutex mu_;
  std::vector<std::string> bodies_;
  std::vector<std::shared_ptr<http::ResponseWriter>> held_;  // kHang streams (io thread)
};

// Answers each POST with the 200 SSE head and one content event, then closes the
// socket (an upstream dying mid-stream); other methods get 404. With
// send_event = false it closes right after the head, before any body byte (a vLLM
// replica dying before the first token: vLLM sends its head at once).
class BreakingUpstream {
 public:
  explicit BreakingUpstream(bool send_event = true);
  int posts() const { return posts_; }
  ~BreakingUpstream();
  uint16_t port() const { return port_; }

 private:
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> posts_{0};
  std::thread thread_;
};

// A loopback port nothing listens on (bound, then released).
uint16_t DeadPort();

}  // namespace kinference::gateway::testing
