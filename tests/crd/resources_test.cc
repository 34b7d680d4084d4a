#include "crd/resources.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace kinference::crd {
namespace {

namespace json = boost::json;

json::object Parse(const std::string& text) { return json::parse(text).as_object(); }

TEST(PolicyFromObjectTest, ErrorsNameTheFieldPathWithoutTheSource) {
  auto p = PolicyFromObject(Parse(
      R"({"metadata":{"name":"p","namespace":"ns","uid":"u","generation":3},
          "spec":{"mode":"strict","constraints":{"exclude":{"classes":["cloud"]}}}})"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "spec.mode: unknown mode 'strict' (expected enforce|dry-run)\n"
            "spec.constraints.exclude.classes[0]: unknown class 'cloud' (expected local|provider)");
  EXPECT_EQ(FieldPathOf(p.status().message()), "spec.mode");
}

TEST(PolicyFromObjectTest, ApiServerMetadataIsIgnoredAndTheSourceNamesTheObject) {
  auto p = PolicyFromObject(Parse(
      R"({"apiVersion":"kinference.io/v1alpha1","kind":"InferencePolicy",
          "metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"9",
                      "managedFields":[{"manager":"kubectl"}],"labels":{"a":"b"}},
          "spec":{"priority":5},"status":{"observedGeneration":1}})"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->name, "p");
  EXPECT_EQ(p->priority, 5);
  EXPECT_EQ(p->source, "InferencePolicy ns/p");
  auto no_spec = PolicyFromObject(Parse(R"({"metadata":{"name":"p"}})"));
  ASSERT_FALSE(no_spec.ok());
  EXPECT_EQ(FieldPathOf(no_spec.status().message()), "spec");
}

TEST(ProviderFromObjectTest, ReadsEveryFieldWithDefaults) {
  auto p = ProviderFromObject(Parse(
      R"({"metadata":{"name":"openai","namespace":"ns"},
          "spec":{"baseURL":"https://api.openai.com/v1",
                  "models":[{"name":"gpt-4o-mini","servesModel":"small"},{"name":"gpt-4o"}],
                  "apiKeySecretRef":{"name":"openai","key":"apiKey"},
                  "caBundle":{"configMapRef":{"name":"ca"}},
                  "timeoutSeconds":20,"circuitBreaker":{"failures":3}}})"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->api, "openai");
  ASSERT_EQ(p->models.size(), 2u);
  EXPECT_EQ(p->models[0].serves_model, "small");
  EXPECT_EQ(p->models[1].serves_model, "gpt-4o");
  EXPECT_EQ(p->api_key.name, "openai");
  EXPECT_EQ(p->ca_kind, "ConfigMap");
  EXPECT_EQ(p->ca.key, "ca.crt");
  EXPECT_EQ(p->timeout_s, 20);
  EXPECT_EQ(p->breaker_failures, 3);
  EXPECT_EQ(p->breaker_cooldown_s, 30);
  EXPECT_EQ(p->retries_before_first_byte, 1);
}

TEST(ProviderFromObjectTest, BadInputIsRefusedWithEveryFieldPath) {
  auto p = ProviderFromObject(Parse(
      R"({"metadata":{"name":"a","namespace":"ns"},
          "spec":{"api":"anthropic","baseURL":"https://api.anthropic.com/v1",
                  "models":[{"name":"m"},{"name":"n","servesModel":"m"}],
                  "apiKeySecretRef":{"name":"s"},
                  "caBundle":{"secretRef":{"name":"x"},"configMapRef":{"name":"y"}},
                  "retriesBeforeFirstByte":1.5,"extra":1}})"));
  ASSERT_FALSE(p.ok());
  const std::string m = p.status().message();
  EXPECT_NE(m.find("spec.extra: unknown field"), std::string::npos) << m;
  EXPECT_NE(m.find("spec.baseURL: for api anthropic give the API root"), std::string::npos) << m;
  EXPECT_NE(m.find("spec.models[1].servesModel: 'm' is served by an earlier entry too"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("spec.apiKeySecretRef.key: required"), std::string::npos) << m;
  EXPECT_NE(m.find("spec.caBundle: give exactly one of secretRef and configMapRef"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("spec.retriesBeforeFirstByte: expected an integer"), std::string::npos) << m;
  auto bad_url = ProviderFromObject(Parse(
      R"({"metadata":{"name":"a"},"spec":{"baseURL":"ftp://x","models":[{"name":"m"}],
          "apiKeySecretRef":{"name":"s","key":"k"}}})"));
  ASSERT_FALSE(bad_url.ok());
  EXPECT_EQ(FieldPathOf(bad_url.status().message()), "spec.baseURL");
}

TEST(TenantFromObjectTest, ReadsKeysAndAccess) {
  auto t = TenantFromObject(Parse(
      R"({"metadata":{"name":"acme","namespace":"ns"},
          "spec":{"apiKeys":[{"secretRef":{"name":"acme-keys"}},{"secretRef":{"name":"k2","key":"a"}}],
                  "access":{"models":["m"],"pools":["p"]}}})"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->api_keys.size(), 2u);
  EXPECT_EQ(t->api_keys[0].key, "");
  EXPECT_EQ(t->api_keys[1].key, "a");
  EXPECT_EQ(t->models, std::vector<std::string>{"m"});
  EXPECT_EQ(t->pools, std::vector<std::string>{"p"});
  EXPECT_TRUE(t->providers.empty());
  auto bad = TenantFromObject(Parse(R"({"metadata":{"name":"a"},"spec":{"apiKeys":[{}]}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(FieldPathOf(bad.status().message()), "spec.apiKeys[0].secretRef");
}

TEST(TenantFromObjectTest, ReadsLimitsAndNamesABadLimitField) {
  auto t = TenantFromObject(Parse(
      R"({"metadata":{"name":"acme","namespace":"ns"},
          "spec":{"apiKeys":[{"secretRef":{"name":"k"}}],
                  "limits":{"requestsPerMinute":60,"outputTokensPerMinute":2000,
                            "spendPerDayUSD":"12.50","onLimitsUnavailable":"FailClosed"}}})"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_TRUE(t->limits.has_value());
  EXPECT_EQ(t->limits->requests_per_minute, 60);
  EXPECT_EQ(t->limits->output_tokens_per_minute, 2000);
  EXPECT_EQ(t->limits->spend_per_day, 12'500'000'000);
  EXPECT_EQ(t->limits->on_unavailable, accounting::OnUnavailable::kFailClosed);
  auto none = TenantFromObject(
      Parse(R"({"metadata":{"name":"a"},"spec":{"apiKeys":[{"secretRef":{"name":"k"}}]}})"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->limits.has_value());
  auto bad = TenantFromObject(Parse(
      R"({"metadata":{"name":"a"},"spec":{"apiKeys":[{"secretRef":{"name":"k"}}],
          "limits":{"requestsPerMinute":0}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(FieldPathOf(bad.status().message()), "spec.limits.requestsPerMinute");
}

TEST(SecretValuesTest, DecodesOneKeyOrAllAndTrimsTrailingNewlines) {
  // "sk-1\n" and "sk-2"
  json::object secret =
      Parse(R"({"metadata":{"name":"keys"},"data":{"a":"c2stMQo=","b":"c2stMg=="}})");
  auto one = SecretValues(secret, "a");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<std::string>{"sk-1"});
  auto all = SecretValues(secret, "");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
  auto missing = SecretValues(secret, "c");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "secret keys has no key 'c'");
  EXPECT_FALSE(SecretValues(Parse(R"({"metadata":{"name":"e"}})"), "").ok());
  auto cm = ConfigMapValue(Parse(R"({"metadata":{"name":"c"},"data":{"ca.crt":"PEM"}})"), "ca.crt");
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ(*cm, "PEM");
}

TEST(PoolTest, ReadsSelectorAndTargetPortAndIgnoresOtherFields) {
  auto p = PoolFromObject(Parse(
      R"({"metadata":{"name":"llama","namespace":"ns"},
          "spec":{"selector":{"matchLabels":{"app":"vllm-llama"}},
                  "targetPorts":[{"number":8000}],
                  "endpointPickerRef":{"name":"epp","port":{"number":9002}}}})"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->target_ports, std::vector<uint16_t>{8000});
  EXPECT_EQ(p->match_labels.at("app"), "vllm-llama");
  auto bad = PoolFromObject(
      Parse(R"({"metadata":{"name":"x"},"spec":{"selector":{"matchLabels":{"a":"b"}}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(FieldPathOf(bad.status().message()), "spec.targetPorts");
}

// Data-parallel ranks: every target port, in order; a duplicate or a bad later port is an
// error naming its index (before, only targetPorts[0] was read and the rest ignored).
TEST(PoolTest, ReadsEveryTargetPort) {
  auto p = PoolFromObject(Parse(R"({"metadata":{"name":"dp"},
      "spec":{"selector":{"matchLabels":{"app":"v"}},
              "targetPorts":[{"number":8000},{"number":8001},{"number":8002}]}})"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->target_ports, (std::vector<uint16_t>{8000, 8001, 8002}));
  auto dup = PoolFromObject(Parse(R"({"metadata":{"name":"dp"},
      "spec":{"selector":{"matchLabels":{"app":"v"}},
              "targetPorts":[{"number":8000},{"number":8000}]}})"));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(FieldPathOf(dup.status().message()), "spec.targetPorts[1].number");
  auto bad = PoolFromObject(Parse(R"({"metadata":{"name":"dp"},
      "spec":{"selector":{"matchLabels":{"app":"v"}},
              "targetPorts":[{"number":8000},{"number":70000}]}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(FieldPathOf(bad.status().message()), "spec.targetPorts[1].number");
}

TEST(PoolTest, PodsAreEndpointsWhenReadyWithAnIpAndSelectedByEveryLabel) {
  PoolSpec pool{"llama", "ns", {{"app", "vllm"}, {"model", "llama"}}, {8000}};
  auto pod = Parse(
      R"({"metadata":{"name":"p","namespace":"ns","labels":{"app":"vllm","model":"llama","x":"y"}},
          "status":{"podIP":"127.0.0.2","conditions":[{"type":"PodScheduled","status":"True"},
                                                      {"type":"Ready","status":"True"}]}})");
  EXPECT_TRUE(Selects(pool, pod));
  EXPECT_TRUE(PodReady(pod));
  EXPECT_EQ(PodIp(pod), "127.0.0.2");
  auto not_ready = pod;
  not_ready["status"].as_object()["conditions"].as_array()[1].as_object()["status"] = "False";
  EXPECT_FALSE(PodReady(not_ready));
  auto deleting = pod;
  deleting["metadata"].as_object()["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_FALSE(PodReady(deleting));
  auto no_ip = pod;
  no_ip["status"].as_object().erase("podIP");
  EXPECT_FALSE(PodReady(no_ip));
  auto other_labels = pod;
  other_labels["metadata"].as_object()["labels"].as_object()["model"] = "qwen";
  EXPECT_FALSE(Selects(pool, other_labels));
  auto other_ns = pod;
  other_ns["metadata"].as_object()["namespace"] = "other";
  EXPECT_FALSE(Selects(pool, other_ns));
}

}  // namespace
}  // namespace kinference::crd
