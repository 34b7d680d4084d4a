#include "testing/k8s_testenv.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

extern char** environ;

namespace kinference::testing {
namespace {

std::string Script() {
  const char* root = std::getenv("KINFERENCE_SOURCE_DIR");
  std::string dir = root ? root : KINFERENCE_SOURCE_DIR;
  return dir + "/scripts/k8s-testenv.sh";
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& extra_env,
                         const std::string& input) {
  CommandResult result;
  if (argv.empty()) return result;
  // Everything exec needs is prepared before fork.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    if (extra_env.count(s.substr(0, s.find('='))) == 0) env_strings.push_back(std::move(s));
  }
  for (const auto& [k, v] : extra_env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  int out[2], in[2];
  if (pipe2(out, O_CLOEXEC) != 0) return result;
  if (pipe2(in, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return result;
  }
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], in[0], in[1]}) close(fd);
    return result;
  }
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  close(in[0]);
  // Feed stdin and drain stdout together, so neither side blocks on a full pipe.
  size_t written = 0;
  int in_fd = in[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  signal(SIGPIPE, SIG_IGN);
  char buf[8192];
  while (true) {
    pollfd fds[2] = {{out[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
    if (poll(fds, in_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (in_fd >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = write(in_fd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 || written == input.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      result.output.append(buf, static_cast<size_t>(n));
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::unique_ptr<K8sTestEnv> K8sTestEnv::Start(std::string* error) {
  std::unique_ptr<K8sTestEnv> env(new K8sTestEnv());
  env->script_ = Script();
  std::string tmpl = (std::filesystem::temp_directory_path() / "kinference-k8s-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    if (error) *error = std::string("mkdtemp: ") + std::strerror(errno);
    return nullptr;
  }
  env->dir_ = tmpl;
  CommandResult r = RunCommand(
      {"bash", env->script_, "start", env->dir_},
      {{"K8S_TESTENV_NO_BUILD", "1"}, {"K8S_TESTENV_WATCH_PID", std::to_string(getpid())}});
  if (r.exit_code != 0) {
    if (error) *error = "k8s-testenv.sh start failed:\n" + r.output;
    env->stopped_ = true;  // the script stopped what it started
    return nullptr;
  }
  if (!env->ReadEnv(error)) return nullptr;  // the destructor stops the servers
  return env;
}

bool K8sTestEnv::ReadEnv(std::string* error) {
  std::ifstream in(dir_ + "/env");
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) env_[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (Get("K8S_SERVER").empty() || Get("KUBECONFIG").empty()) {
    if (error) *error = "no K8S_SERVER/KUBECONFIG in " + dir_ + "/env";
    return false;
  }
  return true;
}

const std::string& K8sTestEnv::Get(const std::string& key) const {
  static const std::string kEmpty;
  auto it = env_.find(key);
  return it == env_.end() ? kEmpty : it->second;
}

CommandResult K8sTestEnv::Kubectl(const std::vector<std::string>& args,
                                  const std::string& input) const {
  std::vector<std::string> argv = {bin_dir() + "/kubectl", "--kubeconfig", kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {}, input);
}

bool K8sTestEnv::StopApiServer(std::string* error) {
  CommandResult r = RunCommand({"bash", script_, "stop-apiserver", dir_});
  if (r.exit_code != 0 && error) *error = r.output;
  return r.exit_code == 0;
}

bool K8sTestEnv::StartApiServer(std::string* error) {
  CommandResult r = RunCommand({"bash", script_, "start-apiserver", dir_});
  if (r.exit_code != 0 && error) *error = r.output;
  return r.exit_code == 0;
}

bool K8sTestEnv::Stop() {
  if (stopped_) return true;
  stopped_ = true;
  CommandResult r = RunCommand({"bash", script_, "stop", dir_});
  return r.exit_code == 0;
}

K8sTestEnv::~K8sTestEnv() {
  bool ok = Stop();
  // Logs stay for a failed stop, or when asked (K8S_TESTENV_KEEP=1).
  const char* keep = std::getenv("K8S_TESTENV_KEEP");
  if (ok && !(keep && std::string(keep) == "1")) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

}  // namespace kinference::testing
