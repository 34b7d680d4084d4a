// Test helper (tests/testing/k8s_testenv.h): a real Kubernetes API server (etcd +
// kube-apiserver on free loopback ports, RBAC on) for one test or fixture, started and stopped
// by scripts/k8s-testenv.sh (see that script and docs/kubernetes.md, "Test environment").
//
// Start() runs `k8s-testenv.sh start DIR` in a fresh temp folder and reads DIR/env; it needs
// the tools built (scripts/k8s-tools.sh; `make test` builds them first) and fails at once,
// with the reason in `error`, when they are not. The servers are stopped by the destructor
// (by PID) and, should the test process die first, by the script's watchdog within ~1 s.
// Start-up: ~3 s idle, up to ~20 s on a loaded 2-core machine.
//
// Thread-safety: one owner; Kubectl() may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kinference::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when the command could not run or was killed by a signal
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv (argv[0] looked up in PATH) with `extra_env` added to the environment, waits for
// it, and returns its exit code and output. Optional `input` is written to its stdin.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& extra_env = {},
                         const std::string& input = "");

class K8sTestEnv {
 public:
  static std::unique_ptr<K8sTestEnv> Start(std::string* error = nullptr);
  ~K8sTestEnv();
  K8sTestEnv(const K8sTestEnv&) = delete;
  K8sTestEnv& operator=(const K8sTestEnv&) = delete;

  const std::string& dir() const { return dir_; }
  // Admin credentials (user "admin", group system:masters).
  const std::string& kubeconfig() const { return Get("KUBECONFIG"); }
  const std::string& server() const { return Get("K8S_SERVER"); }  // https://127.0.0.1:PORT
  const std::string& ca_file() const { return Get("K8S_CA_FILE"); }
  const std::string& token() const { return Get("K8S_TOKEN"); }
  // The folder holding kubectl, helm, etcd and kube-apiserver.
  const std::string& bin_dir() const { return Get("K8S_BIN"); }
  // Any DIR/env value ("" when absent).
  const std::string& Get(const std::string& key) const;

  // `kubectl --kubeconfig KUBECONFIG args...`; `input` goes to its stdin (for `apply -f -`).
  CommandResult Kubectl(const std::vector<std::string>& args, const std::string& input = "") const;

  // Stops kube-apiserver only (etcd keeps the objects), and starts it again on the same port
  // and with the same credentials; false (with the script's output in `error`) on failure.
  bool StopApiServer(std::string* error = nullptr);
  bool StartApiServer(std::string* error = nullptr);

  // Stops both servers (the destructor does it too); true if the script succeeded.
  bool Stop();

 private:
  K8sTestEnv() = default;
  bool ReadEnv(std::string* error);

  std::string script_;
  std::string dir_;
  std::map<std::string, std::string> env_;
  bool stopped_ = false;
};

}  // namespace kinference::testing
