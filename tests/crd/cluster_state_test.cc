#include "crd/cluster_state.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace kinference::crd {
namespace {

namespace json = boost::json;

k8s::ObjectPtr Obj(const std::string& text) {
  return std::make_shared<const json::object>(json::parse(text).as_object());
}

struct Caches {
  k8s::ObjectCache pools, pods, policies, providers, tenants, secrets, config_maps;
  ClusterCaches View() const {
    return ClusterCaches{&pools, &pods, &policies, &providers, &tenants, &secrets, &config_maps};
  }
};

std::string Pod(const std::string& name, const std::string& ip, bool ready, const std::string& rv,
                const std::string& app = "vllm") {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ns","resourceVersion":")" + rv +
         R"(","labels":{"app":")" + app + R"("}},"status":{"podIP":")" + ip +
         R"(","conditions":[{"type":"Ready","status":")" + (ready ? "True" : "False") + R"("}]}})";
}

TEST(ClusterStateTest, PoolEndpointsAreTheReadySelectedPodsAtTheTargetPort) {
  Caches c;
  c.pools.Upsert(Obj(R"({"metadata":{"name":"llama","namespace":"ns","resourceVersion":"1"},
      "spec":{"selector":{"matchLabels":{"app":"vllm"}},"targetPorts":[{"number":8000}]}})"));
  c.pods.Upsert(Obj(Pod("a", "127.0.0.2", true, "1")));
  c.pods.Upsert(Obj(Pod("b", "127.0.0.3", false, "1")));
  c.pods.Upsert(Obj(Pod("c", "127.0.0.4", true, "1", "other")));
  ClusterState state;
  auto snap = state.Update(c.View());
  ASSERT_EQ(snap.pools.size(), 1u);
  const auto& eps = snap.pools.at("llama").endpoints;
  ASSERT_EQ(eps.size(), 1u);
  EXPECT_EQ(eps[0].id, "llama/a");
  EXPECT_EQ(eps[0].ip, "127.0.0.2");
  EXPECT_EQ(eps[0].port, 8000);
  c.pods.Upsert(Obj(Pod("b", "127.0.0.3", true, "2")));
  snap = state.Update(c.View());
  EXPECT_EQ(snap.pools.at("llama").endpoints.size(), 2u);
  c.pods.Remove("ns/a");
  snap = state.Update(c.View());
  ASSERT_EQ(snap.pools.at("llama").endpoints.size(), 1u);
  EXPECT_EQ(snap.pools.at("llama").endpoints[0].id, "llama/b");
}

// Every target port of a Pod is an endpoint (the Inference Extension's data-parallel
// ranks); before, only the first port was served.
TEST(ClusterStateTest, EveryTargetPortOfAPodIsAnEndpoint) {
  Caches c;
  c.pools.Upsert(Obj(R"({"metadata":{"name":"dp","namespace":"ns","resourceVersion":"1"},
      "spec":{"selector":{"matchLabels":{"app":"vllm"}},
              "targetPorts":[{"number":8000},{"number":8001}]}})"));
  c.pods.Upsert(Obj(Pod("a", "127.0.0.2", true, "1")));
  ClusterState state;
  auto snap = state.Update(c.View());
  const auto& eps = snap.pools.at("dp").endpoints;
  ASSERT_EQ(eps.size(), 2u);
  EXPECT_EQ(eps[0].id, "dp/a:8000");
  EXPECT_EQ(eps[0].port, 8000);
  EXPECT_EQ(eps[1].id, "dp/a:8001");
  EXPECT_EQ(eps[1].port, 8001);
  EXPECT_EQ(eps[1].ip, "127.0.0.2");
  EXPECT_EQ(eps[1].pod, "a");
}

TEST(ClusterStateTest, AnInvalidEditKeepsTheLastAcceptedPolicyAndIsReportedOnce) {
  Caches c;
  c.policies.Upsert(Obj(R"({"metadata":{"name":"p","namespace":"ns","resourceVersion":"1"},
                            "spec":{"priority":1}})"));
  ClusterState state;
  auto snap = state.Update(c.View());
  ASSERT_EQ(snap.policies.size(), 1u);
  EXPECT_TRUE(state.TakeProblems().empty());
  c.policies.Upsert(Obj(R"({"metadata":{"name":"p","namespace":"ns","resourceVersion":"2"},
                            "spec":{"priority":2,"mode":"strict"}})"));
  snap = state.Update(c.View());
  ASSERT_EQ(snap.policies.size(), 1u);
  EXPECT_EQ(snap.policies[0].priority, 1);
  auto problems = state.TakeProblems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "InferencePolicy ns/p: spec.mode: unknown mode 'strict' (expected enforce|dry-run) "
            "(serving its last accepted version)");
  state.Update(c.View());
  EXPECT_TRUE(state.TakeProblems().empty());  // once per version
  // Never accepted: not served.
  c.policies.Upsert(Obj(R"({"metadata":{"name":"q","namespace":"ns","resourceVersion":"3"},
                            "spec":{"mode":"x"}})"));
  snap = state.Update(c.View());
  EXPECT_EQ(snap.policies.size(), 1u);
  EXPECT_NE(state.TakeProblems().at(0).find("(not served)"), std::string::npos);
  // Deleted: gone.
  c.policies.Remove("ns/p");
  snap = state.Update(c.View());
  EXPECT_TRUE(snap.policies.empty());
}

TEST(ClusterStateTest, ProvidersResolveSecretsAndKeepTheLastKeyWhenTheSecretGoes) {
  Caches c;
  c.providers.Upsert(Obj(R"({"metadata":{"name":"openai","namespace":"ns","resourceVersion":"1"},
      "spec":{"baseURL":"https://api.openai.com/v1","models":[{"name":"gpt"}],
              "apiKeySecretRef":{"name":"key","key":"apiKey"}}})"));
  ClusterState state;
  auto snap = state.Update(c.View());
  EXPECT_TRUE(snap.providers.empty());
  EXPECT_NE(state.TakeProblems().at(0).find("spec.apiKeySecretRef.name: Secret 'key' not found"),
            std::string::npos);
  c.secrets.Upsert(Obj(R"({"metadata":{"name":"key","namespace":"ns","resourceVersion":"1"},
                           "data":{"apiKey":"c2stMQ=="}})"));
  snap = state.Update(c.View());
  ASSERT_EQ(snap.providers.size(), 1u);
  EXPECT_EQ(snap.providers[0].api_key, "sk-1");
  // Rotated.
  c.secrets.Upsert(Obj(R"({"metadata":{"name":"key","namespace":"ns","resourceVersion":"2"},
                           "data":{"apiKey":"c2stMg=="}})"));
  snap = state.Update(c.View());
  EXPECT_EQ(snap.providers[0].api_key, "sk-2");
  c.secrets.Remove("ns/key");
  snap = state.Update(c.View());
  ASSERT_EQ(snap.providers.size(), 1u);
  EXPECT_EQ(snap.providers[0].api_key, "sk-2");
}

TEST(ClusterStateTest, TenantsHoldKeyHashesAndASharedKeyIdentifiesNeither) {
  Caches c;
  c.secrets.Upsert(Obj(R"({"metadata":{"name":"a","namespace":"ns","resourceVersion":"1"},
                           "data":{"k1":"c2stMQ==","k2":"c2stMg=="}})"));
  c.secrets.Upsert(Obj(R"({"metadata":{"name":"b","namespace":"ns","resourceVersion":"1"},
                           "data":{"k":"c2stMg=="}})"));
  c.tenants.Upsert(Obj(R"({"metadata":{"name":"acme","namespace":"ns","resourceVersion":"1"},
                           "spec":{"apiKeys":[{"secretRef":{"name":"a"}}]}})"));
  ClusterState state;
  auto snap = state.Update(c.View());
  ASSERT_EQ(snap.tenants.size(), 1u);
  ASSERT_EQ(snap.tenants[0].key_hashes.size(), 2u);
  EXPECT_EQ(snap.tenants[0].key_hashes[0], Sha256Of("sk-1"));
  c.tenants.Upsert(Obj(R"({"metadata":{"name":"beta","namespace":"ns","resourceVersion":"1"},
                           "spec":{"apiKeys":[{"secretRef":{"name":"b","key":"k"}}]}})"));
  snap = state.Update(c.View());
  ASSERT_EQ(snap.tenants.size(), 2u);
  EXPECT_EQ(snap.tenants[0].key_hashes, std::vector<Sha256>{Sha256Of("sk-1")});
  EXPECT_TRUE(snap.tenants[1].key_hashes.empty());
  auto problems = state.TakeProblems();
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("shared by tenants acme, beta"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace kinference::crd
