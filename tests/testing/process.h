// Test helper (tests/testing/process.h): runs a server binary (engine-sim, gateway) as a child process for
// integration tests. Start() forks/execs it, captures its stdout on a reader thread and
// waits for the line containing `ready_marker` (e.g. "engine-sim listening on
// 127.0.0.1:<port>"), whose trailing number is taken as the port. The child gets SIGKILL
// if the test process dies (PR_SET_PDEATHSIG); the destructor sends SIGTERM, waits, then
// SIGKILL, and reaps it. stderr is inherited (logs show up in the test output).
//
// Thread-safety: one owner; Output() may be called while the reader thread runs.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kinference::testing {

class ChildProcess {
 public:
  // Null on failure (exec failed, the child exited, or no ready line within timeout_s);
  // `error` then says why.
  static std::unique_ptr<ChildProcess> Start(const std::vector<std::string>& argv,
                                             const std::string& ready_marker, double timeout_s = 30,
                                             std::string* error = nullptr);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  uint16_t port() const { return port_; }
  const std::string& ready_line() const { return ready_line_; }
  // True while the child has not exited.
  bool Running();
  // SIGTERM, then SIGKILL after grace_s; returns the wait status (or -1 if already reaped).
  int Stop(double grace_s = 5);
  // Everything the child wrote to stdout so far.
  std::string Output() const;

 private:
  ChildProcess() = default;
  void ReadLoop();

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  bool reaped_ = false;
  int wait_status_ = -1;
  uint16_t port_ = 0;
  std::string ready_line_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string output_;
  bool eof_ = false;
  std::thread reader_;
};

// $KINFERENCE_BIN (set by the kinference_test CMake function), or empty.
std::string KinferenceBin();

}  // namespace kinference::testing
