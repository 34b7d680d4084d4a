// Test support: an io_context running on its own thread, and a way to run a function on it
// and wait for the result (reflectors and electors live on their io thread).
//
// Thread-safety: Run may be called from any thread but the io thread itself.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <thread>

namespace kinference::testing {

class IoThread {
 public:
  IoThread() : work_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  ~IoThread() { Stop(); }
  boost::asio::io_context& io() { return io_; }

  template <typename F>
  auto Run(F&& f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::forward<F>(f));
    auto result = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return result.get();
  }
  // Stops the loop without running what is pending (a crashed process: nothing is released).
  void Stop() {
    if (!thread_.joinable()) return;
    work_.reset();
    io_.stop();
    thread_.join();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace kinference::testing
