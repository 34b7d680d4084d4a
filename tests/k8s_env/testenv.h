// Test support for the Kubernetes suites: one real API server per test binary
// (testing::K8sTestEnv, tests/testing/k8s_testenv.h, started on first use and stopped at
// exit), the CRDs installed once, a namespace per test, and REST calls with the admin
// credentials through the project's own client (src/k8s).
//
// Thread-safety: call from the test thread.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "testing/k8s_testenv.h"

namespace kinference::testing {

class TestEnv {
 public:
  // The binary's environment; null (after a test failure naming why) when it cannot start.
  static TestEnv* Get();

  K8sTestEnv& k8s() { return *env_; }
  const std::string& kubeconfig() const { return env_->kubeconfig(); }
  const std::string& dir() const { return env_->dir(); }
  std::string Env(const std::string& key) const { return env_->Get(key); }
  const k8s::ClusterConfig& config() const { return config_; }

  // kubectl ARGS (exit status; output in `out`), and kubectl apply -f - of `yaml`.
  int Kubectl(const std::vector<std::string>& args, std::string* out = nullptr) const;
  int Apply(const std::string& yaml, std::string* out = nullptr) const;
  // A blocking REST call with the admin credentials.
  Result<k8s::ApiResponse> Call(const std::string& method, const std::string& target,
                                const std::string& body = "",
                                std::string_view content_type = "") const;
  // A fresh namespace for one test ("t-<name>-<n>").
  std::string NewNamespace(const std::string& name);
  // The Kinference CRDs (deploy/helm/kinference/crds/) and the InferencePool test CRD
  // (tests/testing/k8s/), applied once and Established.
  void InstallCrds();
  bool StopApiServer();
  bool StartApiServer();
  // Compacts etcd at its current revision (etcd's v3 JSON gateway): older resourceVersions
  // are gone, as on a cluster whose API server compacts every 5 minutes.
  bool CompactEtcd();

 private:
  std::unique_ptr<K8sTestEnv> env_;
  k8s::ClusterConfig config_;
  bool crds_ = false;
  int namespaces_ = 0;
};

// Polls `pred` every 50 ms until true or `timeout_s` passed; returns its last value.
inline bool WaitFor(const std::function<bool()>& pred, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string SourceDir();

}  // namespace kinference::testing
