// Test helper: real PostgreSQL and Redis servers from the Debian packages (postgresql,
// redis-server; installed by scripts/install-deps.sh), each in a temporary data
// directory, listening on a free loopback port, stopped by process id when the object
// goes away (and killed if the test process dies). When the test runs as root (CI does),
// the servers run as the packages' unprivileged users (postgres, redis) through
// `setpriv` (PostgreSQL refuses to run as root).
//
// Thread-safety: one owner (the test thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "testing/process.h"

namespace kinference::testing {

// A free TCP port on 127.0.0.1 (bound and released; a tiny race remains).
uint16_t FreePort();

class PostgresServer {
 public:
  // initdb (trust authentication for the superuser "kinference") and start; null with
  // `error` set when the binaries are missing or the server does not come up.
  static std::unique_ptr<PostgresServer> Start(std::string* error);
  ~PostgresServer();
  // libpq conninfo for the server's "postgres" database.
  std::string conninfo() const;
  uint16_t port() const { return port_; }
  // Fast shutdown (SIGINT: active transactions abort, clients are disconnected); waits.
  void Stop();
  // Crash-like stop (SIGKILL of the postmaster's process group is not possible here;
  // SIGQUIT = immediate shutdown, recovery at the next start).
  void StopImmediate();
  // Starts again on the same data directory and port.
  bool Restart(std::string* error);
  bool running() const { return proc_ != nullptr; }

 private:
  PostgresServer() = default;
  bool Launch(std::string* error);
  void SignalAndWait(int sig);

  std::string bin_dir_, data_dir_, root_dir_;
  uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> proc_;
};

class RedisServer {
 public:
  static std::unique_ptr<RedisServer> Start(std::string* error);
  ~RedisServer();
  uint16_t port() const { return port_; }
  void Stop();
  bool Restart(std::string* error);
  bool running() const { return proc_ != nullptr; }

 private:
  RedisServer() = default;
  bool Launch(std::string* error);

  std::string dir_;
  uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> proc_;
};

}  // namespace kinference::testing
