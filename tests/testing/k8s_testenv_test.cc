// scripts/k8s-testenv.sh through its C++ helper: a real API server that kubectl reaches with
// the written kubeconfig, RBAC enforced, state kept across an API server restart, and no
// process left behind after Stop() or after the watched process dies.
#include "testing/k8s_testenv.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace kinference::testing {
namespace {

// True while `pid` runs. A process that has exited but is not reaped yet (a zombie: its
// parent, the start script, is gone and PID 1 reaps it later) counts as gone.
bool Alive(const std::string& pid) {
  if (pid.empty() || kill(std::stoi(pid), 0) != 0) return false;
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// Waits up to `timeout_s` for `pid` to be gone.
bool GoneWithin(const std::string& pid, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (Alive(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

class K8sTestEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    env_ = K8sTestEnv::Start(&error);
    ASSERT_TRUE(env_) << error;
  }
  std::unique_ptr<K8sTestEnv> env_;
};

TEST_F(K8sTestEnvTest, KubeconfigReachesTheApiServerOverVerifiedTls) {
  EXPECT_EQ(env_->server().rfind("https://127.0.0.1:", 0), 0u) << env_->server();
  CommandResult r = env_->Kubectl({"get", "namespace", "default", "-o", "name"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "namespace/default\n");
  // The CA file is the serving certificate: curl verifies the server with it.
  r = RunCommand({"curl", "-fsS", "--cacert", env_->ca_file(), "-H",
                  "Authorization: Bearer " + env_->token(), env_->server() + "/readyz"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "ok");
}

TEST_F(K8sTestEnvTest, RbacIsEnforcedForServiceAccountTokens) {
  ASSERT_EQ(env_->Kubectl({"create", "serviceaccount", "reader"}).exit_code, 0);
  CommandResult token = env_->Kubectl({"create", "token", "reader"});
  ASSERT_EQ(token.exit_code, 0) << token.output;
  std::string t = token.output.substr(0, token.output.find('\n'));
  CommandResult r = env_->Kubectl({"auth", "can-i", "list", "pods", "--token", t});
  EXPECT_EQ(r.output, "no\n") << r.output;
  ASSERT_EQ(
      env_->Kubectl({"create", "role", "pod-reader", "--verb=list", "--resource=pods"}).exit_code,
      0);
  ASSERT_EQ(env_->Kubectl({"create", "rolebinding", "reader", "--role=pod-reader",
                           "--serviceaccount=default:reader"})
                .exit_code,
            0);
  r = env_->Kubectl({"auth", "can-i", "list", "pods", "--token", t});
  EXPECT_EQ(r.output, "yes\n") << r.output;
  r = env_->Kubectl({"get", "pods", "--token", t});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = env_->Kubectl({"get", "secrets", "--token", t});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("Forbidden"), std::string::npos) << r.output;
}

TEST_F(K8sTestEnvTest, ObjectsSurviveAnApiServerRestartOnTheSamePort) {
  ASSERT_EQ(env_->Kubectl({"create", "configmap", "kept", "--from-literal=k=v"}).exit_code, 0);
  std::string old_pid = env_->Get("APISERVER_PID");
  std::string error;
  ASSERT_TRUE(env_->StopApiServer(&error)) << error;
  EXPECT_FALSE(Alive(old_pid));
  EXPECT_NE(env_->Kubectl({"get", "configmap", "kept"}).exit_code, 0);  // down
  ASSERT_TRUE(env_->StartApiServer(&error)) << error;
  CommandResult r = env_->Kubectl({"get", "configmap", "kept", "-o", "jsonpath={.data.k}"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "v");
}

TEST_F(K8sTestEnvTest, StopEndsBothServers) {
  std::string etcd = env_->Get("ETCD_PID"), apiserver = env_->Get("APISERVER_PID");
  ASSERT_TRUE(Alive(etcd));
  ASSERT_TRUE(Alive(apiserver));
  EXPECT_TRUE(env_->Stop());
  EXPECT_FALSE(Alive(etcd));
  EXPECT_FALSE(Alive(apiserver));
  EXPECT_TRUE(env_->Stop());  // repeating is harmless
}

// A test process killed before it stops its servers: the watchdog stops them.
TEST(K8sTestEnvWatchdogTest, ServersStopWhenTheWatchedProcessDies) {
  char tmpl[] = "/tmp/kinference-k8s-watch-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  std::string dir = tmpl;
  pid_t sleeper = fork();
  ASSERT_GE(sleeper, 0);
  if (sleeper == 0) {
    execlp("sleep", "sleep", "600", nullptr);
    _exit(127);
  }
  std::string script = std::string(KINFERENCE_SOURCE_DIR) + "/scripts/k8s-testenv.sh";
  CommandResult r = RunCommand(
      {"bash", script, "start", dir + "/env"},
      {{"K8S_TESTENV_NO_BUILD", "1"}, {"K8S_TESTENV_WATCH_PID", std::to_string(sleeper)}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir + "/env/env");
  std::string line, etcd, apiserver;
  while (std::getline(in, line)) {
    if (line.rfind("ETCD_PID=", 0) == 0) etcd = line.substr(9);
    if (line.rfind("APISERVER_PID=", 0) == 0) apiserver = line.substr(14);
  }
  EXPECT_TRUE(Alive(etcd));
  EXPECT_TRUE(Alive(apiserver));
  kill(sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
  EXPECT_TRUE(GoneWithin(apiserver, 30));
  EXPECT_TRUE(GoneWithin(etcd, 30));
  RunCommand({"bash", script, "stop", dir + "/env"});  // no-op unless the watchdog failed
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kinference::testing
