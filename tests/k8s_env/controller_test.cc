// `kinference controller` and `kinference policy history/rollback` against a real API
// server: the CRDs and the loader agree, status conditions with field paths, revisions,
// rollback, missing Secrets, and leader election between two controller processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "crd/revisions.h"
#include "crd/yaml_json.h"
#include "k8s/resource.h"
#include "k8s_env/testenv.h"
#include "testing/launch.h"

namespace kinference {
namespace {

namespace json = boost::json;
using testing::ChildProcess;
using testing::TestEnv;
using testing::WaitFor;

// Leader election fast enough for tests: lease 3 s, renew deadline 2 s, retry 0.25 s.
std::unique_ptr<ChildProcess> StartController(TestEnv* env, const std::string& ns,
                                              const std::string& identity) {
  return testing::LaunchKinference({"controller", "--kubeconfig", env->kubeconfig(), "--namespace",
                                    ns, "--identity", identity, "--lease-duration-s", "3",
                                    "--renew-deadline-s", "2", "--retry-period-s", "0.25",
                                    "--revision-history-limit", "5"});
}

// `kinference ARGS` to completion: exit status, output in `out`.
int Cli(std::vector<std::string> args, std::string* out) {
  args.insert(args.begin(), testing::KinferenceBin());
  testing::CommandResult r = testing::RunCommand(args);
  *out = r.output;
  return r.exit_code;
}

std::string Policy(const std::string& name, const std::string& spec_yaml) {
  return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata:\n  name: " + name +
         "\nspec:\n" + spec_yaml;
}

std::optional<json::object> Get(TestEnv* env, const k8s::ResourceType& type, const std::string& ns,
                                const std::string& name) {
  auto r = env->Call("GET", k8s::ObjectPath(type, ns, name));
  if (!r.ok() || !r->ok()) return std::nullopt;
  auto o = k8s::ParseObject(*r);
  if (!o.ok()) return std::nullopt;
  return *o;
}

// The condition `type` of an object once its status reports the object's generation.
std::optional<json::object> Condition(TestEnv* env, const k8s::ResourceType& rt,
                                      const std::string& ns, const std::string& name,
                                      const std::string& type) {
  auto o = Get(env, rt, ns, name);
  if (!o) return std::nullopt;
  const json::value* og = k8s::Find(*o, {"status", "observedGeneration"});
  if (og == nullptr || og->to_number<int64_t>() != k8s::GenerationOf(*o)) return std::nullopt;
  const json::value* conds = k8s::Find(*o, {"status", "conditions"});
  if (conds == nullptr) return std::nullopt;
  for (const auto& c : conds->as_array())
    if (c.as_object().at("type").as_string() == type) return c.as_object();
  return std::nullopt;
}

std::string Field(const std::optional<json::object>& c, const char* key) {
  return c ? std::string(k8s::StringAt(*c, {key})) : "";
}

int64_t CurrentRevision(TestEnv* env, const std::string& ns, const std::string& name) {
  auto o = Get(env, k8s::kInferencePolicies, ns, name);
  const json::value* v = o ? k8s::Find(*o, {"status", "currentRevision"}) : nullptr;
  return v ? v->to_number<int64_t>() : 0;
}

class ControllerEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = TestEnv::Get();
    ASSERT_NE(env_, nullptr);
    env_->InstallCrds();
  }
  TestEnv* env_ = nullptr;
};

TEST_F(ControllerEnvTest, ExamplePoliciesAreValidForTheApiServerAndUnknownFieldsAreRefused) {
  std::string ns = env_->NewNamespace("schema");
  std::string out;
  EXPECT_EQ(env_->Kubectl({"apply", "--dry-run=server", "-n", ns, "-f",
                           testing::SourceDir() + "/examples/policies/"},
                          &out),
            0)
      << out;
  // kubectl validates fields on the server (Strict): a typo is an error, not pruned.
  int rc =
      env_->Apply(Policy("typo", "  constraints:\n    exclude:\n      clases: [provider]\n"), &out);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("unknown field"), std::string::npos) << out;
  EXPECT_NE(out.find("clases"), std::string::npos) << out;
  // The CEL rule refuses what the loader refuses.
  rc = env_->Apply(
      Policy("minmax", "  match:\n    features: {minPromptTokens: 10, maxPromptTokens: 5}\n"),
      &out);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("minPromptTokens is greater than maxPromptTokens"), std::string::npos) << out;
  // Defaults are applied by the API server.
  ASSERT_EQ(env_->Kubectl({"apply", "-n", ns, "-f",
                           testing::SourceDir() + "/examples/policies/pii-local-only.yaml"},
                          &out),
            0)
      << out;
  auto obj = Get(env_, k8s::kInferencePolicies, ns, "pii-local-only");
  ASSERT_TRUE(obj);
  EXPECT_EQ(k8s::StringAt(*obj, {"spec", "mode"}), "enforce");
}

TEST_F(ControllerEnvTest, StatusRevisionsRollbackAndMissingSecrets) {
  std::string ns = env_->NewNamespace("status");
  auto controller = StartController(env_, ns, "only");
  ASSERT_TRUE(controller);
  std::string out;
  ASSERT_EQ(env_->Apply("apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\n"
                        "metadata: {name: p, namespace: " +
                            ns + "}\nspec: {priority: 1}\n",
                        &out),
            0)
      << out;
  ASSERT_TRUE(WaitFor(
      [&] {
        return Field(Condition(env_, k8s::kInferencePolicies, ns, "p", "Accepted"), "status") ==
               "True";
      },
      30));
  EXPECT_EQ(CurrentRevision(env_, ns, "p"), 1);
  // An edit is revision 2.
  ASSERT_EQ(env_->Kubectl({"patch", "inferencepolicy", "p", "-n", ns, "--type=merge", "-p",
                           R"({"spec":{"priority":2}})"},
                          &out),
            0)
      << out;
  ASSERT_TRUE(WaitFor([&] { return CurrentRevision(env_, ns, "p") == 2; }, 30));
  // The revision objects: owned by the policy, labelled with its uid.
  auto policy = Get(env_, k8s::kInferencePolicies, ns, "p");
  auto list =
      env_->Call("GET", k8s::CollectionPath(k8s::kControllerRevisions, ns) + "?labelSelector=" +
                            k8s::QueryEscape(std::string(crd::kPolicyUidLabel) + "=" +
                                             std::string(k8s::UidOf(*policy))));
  ASSERT_TRUE(list.ok() && list->ok());
  auto items = k8s::ParseObject(*list)->at("items").as_array();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].at("metadata").at("ownerReferences").as_array()[0].at("uid").as_string(),
            k8s::UidOf(*policy));
  // Rollback to the previous revision with the CLI.
  ASSERT_EQ(Cli({"policy", "rollback", "p", "--kubeconfig", env_->kubeconfig(), "-n", ns}, &out), 0)
      << out;
  EXPECT_NE(out.find("rolled back to revision 1"), std::string::npos) << out;
  policy = Get(env_, k8s::kInferencePolicies, ns, "p");
  EXPECT_EQ(policy->at("spec").at("priority").as_int64(), 1);
  // kubectl rollout undo's numbering: the restored revision becomes the newest (3).
  ASSERT_TRUE(WaitFor([&] { return CurrentRevision(env_, ns, "p") == 3; }, 30));
  ASSERT_EQ(Cli({"policy", "history", "p", "--kubeconfig", env_->kubeconfig(), "-n", ns}, &out), 0)
      << out;
  EXPECT_NE(out.find("REVISION"), std::string::npos) << out;
  EXPECT_NE(out.find("\n2 "), std::string::npos) << out;
  EXPECT_NE(out.find("\n3         *"), std::string::npos) << out;
  ASSERT_EQ(Cli({"policy", "history", "p", "--revision", "2", "--kubeconfig", env_->kubeconfig(),
                 "-n", ns},
                &out),
            0)
      << out;
  EXPECT_NE(out.find("priority: 2"), std::string::npos) << out;
  EXPECT_NE(Cli({"policy", "rollback", "p", "--to-revision", "9", "--kubeconfig",
                 env_->kubeconfig(), "-n", ns},
                &out),
            0);
  EXPECT_NE(out.find("unable to find revision 9"), std::string::npos) << out;

  // A provider whose Secret is missing: ResolvedRefs False naming the field; creating the
  // Secret resolves it.
  ASSERT_EQ(env_->Apply(
                "apiVersion: kinference.io/v1alpha1\nkind: InferenceProvider\n"
                "metadata: {name: openai, namespace: " +
                    ns +
                    "}\n"
                    "spec:\n  baseURL: https://api.openai.com/v1\n  models: [{name: gpt-4o-mini}]\n"
                    "  apiKeySecretRef: {name: openai-key, key: apiKey}\n",
                &out),
            0)
      << out;
  ASSERT_TRUE(WaitFor(
      [&] {
        return Field(Condition(env_, k8s::kInferenceProviders, ns, "openai", "ResolvedRefs"),
                     "reason") == "SecretNotFound";
      },
      30));
  EXPECT_EQ(
      Field(Condition(env_, k8s::kInferenceProviders, ns, "openai", "ResolvedRefs"), "message"),
      "spec.apiKeySecretRef.name: Secret 'openai-key' not found");
  EXPECT_EQ(Field(Condition(env_, k8s::kInferenceProviders, ns, "openai", "Accepted"), "status"),
            "True");
  ASSERT_EQ(env_->Kubectl({"create", "secret", "generic", "openai-key", "-n", ns,
                           "--from-literal=apiKey=sk-test"},
                          &out),
            0)
      << out;
  ASSERT_TRUE(WaitFor(
      [&] {
        return Field(Condition(env_, k8s::kInferenceProviders, ns, "openai", "ResolvedRefs"),
                     "status") == "True";
      },
      30));
  EXPECT_TRUE(controller->Running());
}

TEST_F(ControllerEnvTest, AnObjectAnOlderCrdLetsThroughGetsAcceptedFalseWithTheFieldPath) {
  // Helm never upgrades the CRDs in crds/: a cluster may run an older, looser schema.
  // Emulated by this CRD without the CEL rule; the loader still refuses the object.
  YAML::Node crd = YAML::LoadFile(
      testing::SourceDir() + "/deploy/helm/kinference/crds/inferencepolicies.kinference.io.yaml");
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
     ["match"]["properties"]["features"]
         .remove("x-kubernetes-validations");
  std::string out;
  // As JSON: quoted YAML scalars ('True') stay strings.
  ASSERT_EQ(env_->Apply(json::serialize(testing::YamlToJson(crd)), &out), 0) << out;
  std::string ns = env_->NewNamespace("older");
  auto controller = StartController(env_, ns, "older");
  ASSERT_TRUE(controller);
  std::string doc =
      "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: f, namespace: " +
      ns + "}\n";
  ASSERT_EQ(
      env_->Apply(doc + "spec:\n  match:\n    features: {minPromptTokens: 1, maxPromptTokens: 5}\n",
                  &out),
      0)
      << out;
  ASSERT_TRUE(WaitFor([&] { return CurrentRevision(env_, ns, "f") == 1; }, 30));
  // The older CRD accepts min > max; the controller does not.
  bool applied = WaitFor(
      [&] {
        return env_->Apply(
                   doc +
                       "spec:\n  match:\n    features: {minPromptTokens: 10, maxPromptTokens: 5}\n",
                   &out) == 0;
      },
      20);
  // Put the real CRD back for the other tests whatever happens.
  EXPECT_EQ(
      env_->Kubectl({"apply", "-f",
                     testing::SourceDir() +
                         "/deploy/helm/kinference/crds/inferencepolicies.kinference.io.yaml"}),
      0);
  ASSERT_TRUE(applied) << out;
  ASSERT_TRUE(WaitFor(
      [&] {
        return Field(Condition(env_, k8s::kInferencePolicies, ns, "f", "Accepted"), "status") ==
               "False";
      },
      30));
  auto c = Condition(env_, k8s::kInferencePolicies, ns, "f", "Accepted");
  EXPECT_EQ(Field(c, "reason"), "Invalid");
  EXPECT_EQ(Field(c, "message"),
            "spec.match.features: minPromptTokens is greater than maxPromptTokens");
  // The last accepted revision stays current.
  EXPECT_EQ(CurrentRevision(env_, ns, "f"), 1);
}

TEST_F(ControllerEnvTest, KillingTheLeaderHandsStatusWritingToTheOtherReplica) {
  std::string ns = env_->NewNamespace("leader");
  auto a = StartController(env_, ns, "a");
  auto b = StartController(env_, ns, "b");
  ASSERT_TRUE(a && b);
  std::string holder;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto lease = Get(env_, k8s::kLeases, ns, "kinference-controller");
        holder = lease ? std::string(k8s::StringAt(*lease, {"spec", "holderIdentity"})) : "";
        return !holder.empty();
      },
      30));
  std::string out;
  std::string doc =
      "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: one, "
      "namespace: " +
      ns + "}\nspec: {priority: 1}\n";
  ASSERT_EQ(env_->Apply(doc, &out), 0) << out;
  ASSERT_TRUE(WaitFor([&] { return CurrentRevision(env_, ns, "one") == 1; }, 30));
  // SIGKILL: no release; the other replica waits for the lease to expire.
  ChildProcess* leader = holder == "a" ? a.get() : b.get();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(leader->pid(), SIGKILL), 0);
  ASSERT_EQ(env_->Apply("apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: "
                        "{name: two, namespace: " +
                            ns + "}\nspec: {priority: 2}\n",
                        &out),
            0)
      << out;
  ASSERT_TRUE(WaitFor([&] { return CurrentRevision(env_, ns, "two") == 1; }, 30));
  double handover_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto lease = Get(env_, k8s::kLeases, ns, "kinference-controller");
  EXPECT_NE(k8s::StringAt(*lease, {"spec", "holderIdentity"}), holder);
  std::cout << "[ measured ] status writing resumed " << handover_s
            << " s after the leader was killed (lease duration 3 s)\n";
  // Within the lease duration plus one retry period and the write itself (loaded machine:
  // a generous margin).
  EXPECT_LT(handover_s, 3 + 0.25 + 5);
}

}  // namespace
}  // namespace kinference
