// Test helper: runs `kinference <args>` as a child process on loopback and waits for its
// "<what> listening on 127.0.0.1:<port>" line on stdout. The child gets SIGTERM (then
// SIGKILL) when the object dies. stderr is inherited so its logs show in test output.
//
// Thread-safety: use from the test thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kinference::gateway::testing {

class ChildProcess {
 public:
  // Path of the kinference binary: $KINFERENCE_BIN (set by kinference_test).
  static std::string Binary();
  // Starts the binary with `args`; returns once the listening line appeared (port()
  // then holds the port) or the child exited / 60 s passed (port() stays 0).
  explicit ChildProcess(const std::vector<std::string>& args);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Everything read from stdout so far.
  const std::string& output() const { return output_; }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  uint16_t port_ = 0;
  std::string output_;
};

}  // namespace kinference::gateway::testing
