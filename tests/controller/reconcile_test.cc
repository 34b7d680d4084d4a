#include "controller/reconcile.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "crd/revisions.h"

namespace kinference::controller {
namespace {

namespace json = boost::json;

k8s::ObjectPtr Obj(const std::string& text) {
  return std::make_shared<const json::object>(json::parse(text).as_object());
}

struct Caches {
  k8s::ObjectCache policies, providers, tenants, secrets, config_maps, pools, revisions;
  Snapshot Snap() const {
    return Snapshot{&policies, &providers, &tenants, &secrets, &config_maps, &pools, &revisions};
  }
};

std::string PolicyJson(const std::string& name, const std::string& spec,
                       const std::string& uid = "u1") {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ns","uid":")" + uid +
         R"(","generation":2,"resourceVersion":"10"},"spec":)" + spec + "}";
}

const json::object* Condition(const StatusUpdate& s, const std::string& type) {
  for (const auto& c : s.status.at("conditions").as_array())
    if (c.as_object().at("type").as_string() == type) return &c.as_object();
  return nullptr;
}

TEST(ReconcileTest, AnInvalidPolicyGetsAcceptedFalseWithTheFieldPathAndNoRevision) {
  Caches c;
  c.policies.Upsert(Obj(PolicyJson("bad", R"({"mode":"strict"})")));
  auto a = Reconcile(c.Snap(), "T", 10);
  ASSERT_EQ(a.statuses.size(), 1u);
  const auto* accepted = Condition(a.statuses[0], "Accepted");
  ASSERT_NE(accepted, nullptr);
  EXPECT_EQ(accepted->at("status").as_string(), "False");
  EXPECT_EQ(accepted->at("reason").as_string(), "Invalid");
  EXPECT_EQ(accepted->at("message").as_string(),
            "spec.mode: unknown mode 'strict' (expected enforce|dry-run)");
  EXPECT_EQ(a.statuses[0].status.at("observedGeneration").as_int64(), 2);
  EXPECT_TRUE(a.creates.empty());
  EXPECT_EQ(a.statuses[0].type.kind, "InferencePolicy");
  EXPECT_EQ(a.statuses[0].name, "bad");
}

TEST(ReconcileTest, AnAcceptedPolicyGetsARevisionAndItsMissingPoolIsReported) {
  Caches c;
  c.policies.Upsert(Obj(PolicyJson(
      "p",
      R"({"constraints":{"include":{"pools":["llama","qwen"]},"exclude":{"providers":["openai"]}}})")));
  c.pools.Upsert(Obj(R"({"metadata":{"name":"llama","namespace":"ns"}})"));
  auto a = Reconcile(c.Snap(), "T", 10);
  ASSERT_EQ(a.creates.size(), 1u);
  EXPECT_EQ(crd::RevisionNumber(a.creates[0].revision), 1);
  ASSERT_EQ(a.statuses.size(), 1u);
  EXPECT_EQ(Condition(a.statuses[0], "Accepted")->at("status").as_string(), "True");
  const auto* refs = Condition(a.statuses[0], "ResolvedRefs");
  EXPECT_EQ(refs->at("status").as_string(), "False");
  EXPECT_EQ(refs->at("reason").as_string(), "PoolNotFound");
  EXPECT_EQ(refs->at("message").as_string(),
            "spec.constraints.include.pools[1]: InferencePool 'qwen' not found\n"
            "spec.constraints.exclude.providers[0]: InferenceProvider 'openai' not found");
  EXPECT_EQ(a.statuses[0].status.at("currentRevision").as_int64(), 1);
}

TEST(ReconcileTest, ASteadyClusterCausesNoWrites) {
  Caches c;
  c.policies.Upsert(Obj(PolicyJson("p", R"({"priority":1})")));
  auto first = Reconcile(c.Snap(), "T", 10);
  ASSERT_EQ(first.creates.size(), 1u);
  ASSERT_EQ(first.statuses.size(), 1u);
  // The API server now holds what the controller wrote.
  json::object written = json::parse(PolicyJson("p", R"({"priority":1})")).as_object();
  written["status"] = first.statuses[0].status;
  written["metadata"].as_object()["resourceVersion"] = "11";
  c.policies.Upsert(std::make_shared<const json::object>(written));
  json::object rev = first.creates[0].revision;
  rev["metadata"].as_object()["resourceVersion"] = "12";
  c.revisions.Upsert(std::make_shared<const json::object>(rev));
  auto second = Reconcile(c.Snap(), "T2", 10);
  EXPECT_TRUE(second.statuses.empty());
  EXPECT_TRUE(second.creates.empty());
  EXPECT_TRUE(second.renumbers.empty());
  EXPECT_TRUE(second.deletes.empty());
}

TEST(ReconcileTest, RevisionsWhosePolicyIsGoneAreDeleted) {
  Caches c;
  c.revisions.Upsert(Obj(
      R"({"metadata":{"name":"old-1","namespace":"ns","resourceVersion":"1",
                      "labels":{"kinference.io/policy-uid":"gone"}},"data":{"spec":{}},"revision":1})"));
  auto a = Reconcile(c.Snap(), "T", 10);
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_EQ(a.deletes[0].name, "old-1");
}

TEST(ReconcileTest, ProviderAndTenantSecretReferencesAreChecked) {
  Caches c;
  c.providers.Upsert(Obj(
      R"({"metadata":{"name":"openai","namespace":"ns","generation":1,"resourceVersion":"1"},
          "spec":{"baseURL":"https://api.openai.com/v1","models":[{"name":"gpt"}],
                  "apiKeySecretRef":{"name":"openai-key","key":"apiKey"},
                  "caBundle":{"configMapRef":{"name":"ca","key":"ca.crt"}}}})"));
  c.tenants.Upsert(Obj(
      R"({"metadata":{"name":"acme","namespace":"ns","generation":1,"resourceVersion":"1"},
          "spec":{"apiKeys":[{"secretRef":{"name":"acme-keys"}},{"secretRef":{"name":"nope"}}]}})"));
  c.secrets.Upsert(Obj(
      R"({"metadata":{"name":"acme-keys","namespace":"ns","resourceVersion":"1"},
          "data":{"k1":"c2stMQ==","k2":"c2stMg=="}})"));
  auto a = Reconcile(c.Snap(), "T", 10);
  ASSERT_EQ(a.statuses.size(), 2u);
  const StatusUpdate& provider =
      a.statuses[0].type.kind == "InferenceProvider" ? a.statuses[0] : a.statuses[1];
  const StatusUpdate& tenant =
      a.statuses[0].type.kind == "InferenceTenant" ? a.statuses[0] : a.statuses[1];
  const auto* prefs = Condition(provider, "ResolvedRefs");
  EXPECT_EQ(prefs->at("reason").as_string(), "SecretNotFound");
  EXPECT_EQ(prefs->at("message").as_string(),
            "spec.apiKeySecretRef.name: Secret 'openai-key' not found\n"
            "spec.caBundle.configMapRef.name: ConfigMap 'ca' not found");
  const auto* trefs = Condition(tenant, "ResolvedRefs");
  EXPECT_EQ(trefs->at("status").as_string(), "False");
  EXPECT_EQ(trefs->at("message").as_string(),
            "spec.apiKeys[1].secretRef.name: Secret 'nope' not found");
  EXPECT_EQ(tenant.status.at("apiKeys").as_int64(), 2);
}

}  // namespace
}  // namespace kinference::controller
