#include "testing/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

namespace kinference::testing {

std::string KinferenceBin() {
  const char* bin = std::getenv("KINFERENCE_BIN");
  return bin ? bin : "";
}

std::unique_ptr<ChildProcess> ChildProcess::Start(const std::vector<std::string>& argv,
                                                  const std::string& ready_marker, double timeout_s,
                                                  std::string* error) {
  auto fail = [&](std::string why) -> std::unique_ptr<ChildProcess> {
    if (error) *error = std::move(why);
    return nullptr;
  };
  if (argv.empty()) return fail("empty argv");
  // Everything exec needs is prepared before fork (only async-signal-safe calls after).
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return fail("pipe failed");
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return fail("fork failed");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the new descriptor
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<ChildProcess> p(new ChildProcess());
  p->pid_ = pid;
  p->stdout_fd_ = fds[0];
  p->reader_ = std::thread([raw = p.get()] { raw->ReadLoop(); });

  std::unique_lock lock(p->mu_);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout_s));
  while (true) {
    size_t at = p->output_.find(ready_marker);
    if (at != std::string::npos) {
      size_t begin = p->output_.rfind('\n', at);
      begin = begin == std::string::npos ? 0 : begin + 1;
      size_t end = p->output_.find('\n', at);
      if (end != std::string::npos) {
        p->ready_line_ = p->output_.substr(begin, end - begin);
        size_t colon = p->ready_line_.rfind(':');
        if (colon != std::string::npos) {
          p->port_ = static_cast<uint16_t>(std::atoi(p->ready_line_.c_str() + colon + 1));
        }
        return p;
      }
    }
    if (p->eof_) {
      lock.unlock();
      return fail("child exited before printing '" + ready_marker + "'; stdout: " + p->Output());
    }
    if (p->cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      lock.unlock();
      return fail("no '" + ready_marker + "' line within the timeout");
    }
  }
}

void ChildProcess::ReadLoop() {
  char buf[4096];
  while (true) {
    ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    std::lock_guard lock(mu_);
    if (n <= 0) {
      eof_ = true;
      cv_.notify_all();
      return;
    }
    output_.append(buf, static_cast<size_t>(n));
    cv_.notify_all();
  }
}

bool ChildProcess::Running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    wait_status_ = status;
    return false;
  }
  return r == 0;
}

int ChildProcess::Stop(double grace_s) {
  if (reaped_) return wait_status_;
  kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(grace_s));
  while (Running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      reaped_ = true;
      wait_status_ = status;
      break;
    }
    usleep(5000);
  }
  return wait_status_;
}

std::string ChildProcess::Output() const {
  std::lock_guard lock(mu_);
  return output_;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) Stop();
  if (reader_.joinable()) reader_.join();  // the pipe reaches EOF once the child is gone
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

}  // namespace kinference::testing
