#include "testing/services.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

namespace kinference::testing {
namespace fs = std::filesystem;

namespace {

std::string MakeTempDir(const char* prefix) {
  std::string tmpl = (fs::temp_directory_path() / (std::string(prefix) + "XXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return "";
  return buf.data();
}

// The argv prefix that runs a command as `user` when we are root (else nothing), and
// chowns `dirs` to that user.
std::vector<std::string> AsUser(const char* user, const std::vector<std::string>& dirs) {
  if (geteuid() != 0) return {};
  const passwd* pw = getpwnam(user);
  if (!pw) pw = getpwnam("nobody");
  if (!pw) return {};
  for (const auto& d : dirs) {
    if (chown(d.c_str(), pw->pw_uid, pw->pw_gid) != 0) return {};
  }
  return {"/usr/bin/setpriv",
          "--reuid=" + std::to_string(pw->pw_uid),
          "--regid=" + std::to_string(pw->pw_gid),
          "--clear-groups",
          "--pdeathsig=KILL",
          "--"};
}

// Runs argv to completion (stdout/stderr discarded); its exit status.
int RunToEnd(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string PostgresBinDir() {
  std::string best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    std::string bin = (e.path() / "bin").string();
    if (fs::exists(bin + "/postgres") && fs::exists(bin + "/initdb") && bin > best) best = bin;
  }
  return best;
}

}  // namespace

uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// --- PostgreSQL ---

std::unique_ptr<PostgresServer> PostgresServer::Start(std::string* error) {
  std::unique_ptr<PostgresServer> s(new PostgresServer());
  s->bin_dir_ = PostgresBinDir();
  if (s->bin_dir_.empty()) {
    *error =
        "PostgreSQL binaries not found under /usr/lib/postgresql (install the postgresql package)";
    return nullptr;
  }
  s->root_dir_ = MakeTempDir("kinference-pg-");
  if (s->root_dir_.empty()) {
    *error = "mkdtemp failed";
    return nullptr;
  }
  ::chmod(s->root_dir_.c_str(), 0755);
  s->data_dir_ = s->root_dir_ + "/data";
  fs::create_directories(s->data_dir_);
  ::chmod(s->data_dir_.c_str(), 0700);
  std::vector<std::string> argv = AsUser("postgres", {s->root_dir_, s->data_dir_});
  argv.insert(argv.end(), {s->bin_dir_ + "/initdb", "-D", s->data_dir_, "--auth=trust",
                           "--username=kinference", "--no-sync", "--encoding=UTF8", "--locale=C"});
  if (RunToEnd(argv) != 0) {
    *error = "initdb failed in " + s->data_dir_;
    return nullptr;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    s->port_ = FreePort();
    if (s->Launch(error)) return s;
  }
  return nullptr;
}

bool PostgresServer::Launch(std::string* error) {
  std::vector<std::string> argv = AsUser("postgres", {});
  // postgres logs to stderr; the launcher reads stdout for the ready line.
  argv.insert(argv.end(),
              {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", bin_dir_ + "/postgres", "-D", data_dir_,
               "-p", std::to_string(port_), "-k", root_dir_, "-c", "listen_addresses=127.0.0.1",
               "-c", "fsync=off", "-c", "max_connections=50", "-c", "shared_buffers=16MB"});
  proc_ = ChildProcess::Start(argv, "database system is ready to accept connections", 60, error);
  return proc_ != nullptr;
}

std::string PostgresServer::conninfo() const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " user=kinference dbname=postgres";
}

void PostgresServer::SignalAndWait(int sig) {
  if (!proc_) return;
  ::kill(proc_->pid(), sig);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (proc_->Running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  proc_->Stop(1);
  proc_.reset();
}

void PostgresServer::Stop() { SignalAndWait(SIGINT); }
void PostgresServer::StopImmediate() { SignalAndWait(SIGQUIT); }

bool PostgresServer::Restart(std::string* error) {
  Stop();
  return Launch(error);
}

PostgresServer::~PostgresServer() {
  Stop();
  std::error_code ec;
  if (!root_dir_.empty()) fs::remove_all(root_dir_, ec);
}

// --- Redis ---

std::unique_ptr<RedisServer> RedisServer::Start(std::string* error) {
  if (!fs::exists("/usr/bin/redis-server")) {
    *error = "/usr/bin/redis-server not found (install the redis-server package)";
    return nullptr;
  }
  std::unique_ptr<RedisServer> s(new RedisServer());
  s->dir_ = MakeTempDir("kinference-redis-");
  if (s->dir_.empty()) {
    *error = "mkdtemp failed";
    return nullptr;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    s->port_ = FreePort();
    if (s->Launch(error)) return s;
  }
  return nullptr;
}

bool RedisServer::Launch(std::string* error) {
  std::vector<std::string> argv = AsUser("redis", {dir_});
  argv.insert(argv.end(), {"/usr/bin/redis-server", "--port", std::to_string(port_), "--bind",
                           "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir_,
                           "--daemonize", "no", "--logfile", ""});
  proc_ = ChildProcess::Start(argv, "Ready to accept connections", 30, error);
  return proc_ != nullptr;
}

void RedisServer::Stop() {
  if (!proc_) return;
  proc_->Stop(5);
  proc_.reset();
}

bool RedisServer::Restart(std::string* error) {
  Stop();
  return Launch(error);
}

RedisServer::~RedisServer() {
  Stop();
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace kinference::testing
