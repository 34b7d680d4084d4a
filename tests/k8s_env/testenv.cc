#include "k8s_env/testenv.h"

#include <cstdlib>

namespace kinference::testing {

std::string SourceDir() {
  const char* root = std::getenv("KINFERENCE_SOURCE_DIR");
  return root ? root : KINFERENCE_SOURCE_DIR;
}

namespace {
TestEnv* g_env = nullptr;
bool g_tried = false;

class StopAtExit : public ::testing::Environment {
 public:
  void TearDown() override {
    delete g_env;
    g_env = nullptr;
  }
};
}  // namespace

TestEnv* TestEnv::Get() {
  if (g_tried) {
    EXPECT_NE(g_env, nullptr) << "the test API server did not start (see the first failure)";
    return g_env;
  }
  g_tried = true;
  std::string error;
  auto env = K8sTestEnv::Start(&error);
  if (!env) {
    ADD_FAILURE() << "cannot start the test API server: " << error;
    return nullptr;
  }
  auto config = k8s::LoadKubeconfig(env->kubeconfig());
  if (!config.ok()) {
    ADD_FAILURE() << config.status().message();
    return nullptr;
  }
  g_env = new TestEnv();
  g_env->env_ = std::move(env);
  g_env->config_ = *config;
  ::testing::AddGlobalTestEnvironment(new StopAtExit());
  return g_env;
}

int TestEnv::Kubectl(const std::vector<std::string>& args, std::string* out) const {
  CommandResult r = env_->Kubectl(args);
  if (out != nullptr) *out = r.output;
  return r.exit_code;
}

int TestEnv::Apply(const std::string& yaml, std::string* out) const {
  CommandResult r = env_->Kubectl({"apply", "-f", "-"}, yaml);
  if (out != nullptr) *out = r.output;
  return r.exit_code;
}

Result<k8s::ApiResponse> TestEnv::Call(const std::string& method, const std::string& target,
                                       const std::string& body,
                                       std::string_view content_type) const {
  return k8s::CallSync(config_, method, target, body, content_type);
}

std::string TestEnv::NewNamespace(const std::string& name) {
  std::string ns = "t-" + name + "-" + std::to_string(++namespaces_);
  auto r = Call("POST", "/api/v1/namespaces",
                R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns + R"("}})");
  EXPECT_TRUE(r.ok() && r->ok()) << "create namespace " << ns << ": "
                                 << (r.ok() ? k8s::ApiErrorMessage(*r) : r.status().message());
  return ns;
}

void TestEnv::InstallCrds() {
  if (crds_) return;
  std::string out;
  ASSERT_EQ(
      Kubectl({"apply", "-f", SourceDir() + "/deploy/helm/kinference/crds/", "-f",
               SourceDir() + "/tests/testing/k8s/inferencepools.inference.networking.k8s.io.yaml"},
              &out),
      0)
      << out;
  ASSERT_EQ(
      Kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd",
               "inferencepolicies.kinference.io", "inferenceproviders.kinference.io",
               "inferencetenants.kinference.io", "inferencepools.inference.networking.k8s.io"},
              &out),
      0)
      << out;
  crds_ = true;
}

bool TestEnv::StopApiServer() {
  std::string error;
  bool ok = env_->StopApiServer(&error);
  EXPECT_TRUE(ok) << error;
  return ok;
}

bool TestEnv::StartApiServer() {
  std::string error;
  bool ok = env_->StartApiServer(&error);
  EXPECT_TRUE(ok) << error;
  return ok;
}

bool TestEnv::CompactEtcd() {
  std::string etcd = "http://127.0.0.1:" + Env("ETCD_PORT");
  // Any range request answers with the current revision in its header.
  CommandResult range =
      RunCommand({"curl", "-fsS", "-X", "POST", etcd + "/v3/kv/range", "-d", R"({"key":"AA=="})"});
  auto at = range.output.find("\"revision\":\"");
  if (range.exit_code != 0 || at == std::string::npos) {
    ADD_FAILURE() << "etcd range: " << range.output;
    return false;
  }
  at += 12;
  std::string revision = range.output.substr(at, range.output.find('"', at) - at);
  CommandResult compact =
      RunCommand({"curl", "-fsS", "-X", "POST", etcd + "/v3/kv/compaction", "-d",
                  R"({"revision":")" + revision + R"(","physical":true})"});
  EXPECT_EQ(compact.exit_code, 0) << compact.output;
  return compact.exit_code == 0;
}

}  // namespace kinference::testing
