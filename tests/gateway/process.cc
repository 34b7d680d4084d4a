#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <regex>
#include <thread>

namespace kinference::gateway::testing {

std::string ChildProcess::Binary() {
  const char* bin = std::getenv("KINFERENCE_BIN");
  return bin ? bin : "kinference";
}

ChildProcess::ChildProcess(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return;
  std::string bin = Binary();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    argv.push_back(bin.data());
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  stdout_fd_ = fds[0];
  if (pid_ < 0) return;
  const std::regex listening("listening on [0-9.]+:([0-9]+)");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);  // hang guard
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{stdout_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n <= 0) return;  // child exited
    output_.append(buf, static_cast<size_t>(n));
    std::smatch m;
    if (std::regex_search(output_, m, listening)) {
      port_ = static_cast<uint16_t>(std::stoi(m[1].str()));
      // Keep draining stdout so that the child never blocks on a full pipe.
      fcntl(stdout_fd_, F_SETFL, O_NONBLOCK);
      return;
    }
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

}  // namespace kinference::gateway::testing
