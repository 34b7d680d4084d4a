#include <gtest/gtest.h>

#include "policy/policy.h"

namespace kinference::policy {
namespace {

constexpr const char* kFull = R"(
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: full}
spec:
  priority: 7
  mode: dry-run
  match:
    tenants: [acme]
    models: [m1, m2]
    tags: {anyOf: [a], allOf: [b], noneOf: [c]}
    features: {minPromptTokens: 10, maxPromptTokens: 100, toolsPresent: false, stream: true}
  constraints:
    include: {classes: [local, provider], pools: [p], providers: [openai]}
    exclude: {pools: [bad]}
    when: {maxQueueDepth: 8, maxKvCacheUsage: 0.9, maxPredictedTtftSeconds: 2.5,
           maxMetricsAgeSeconds: 10}
  alternatives:
    - {model: small, toleranceSeconds: 0.25}
  onNoCandidate: reject
  onTaggerFailure: ignore
)";

TEST(PolicyLoader, ParsesEveryField) {
  auto r = ParsePolicies(kFull, "full.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const Policy& p = r->front();
  EXPECT_EQ(p.name, "full");
  EXPECT_EQ(p.source, "full.yaml");
  EXPECT_EQ(p.priority, 7);
  EXPECT_EQ(p.mode, Mode::kDryRun);
  EXPECT_EQ(p.match.tenants, std::vector<std::string>{"acme"});
  EXPECT_EQ(p.match.models.size(), 2u);
  EXPECT_EQ(p.match.tags.none_of, std::vector<std::string>{"c"});
  EXPECT_EQ(*p.match.features.min_prompt_tokens, 10);
  EXPECT_EQ(*p.match.features.max_prompt_tokens, 100);
  EXPECT_FALSE(*p.match.features.tools_present);
  EXPECT_TRUE(*p.match.features.stream);
  ASSERT_TRUE(p.constraints.include.has_value());
  EXPECT_EQ(p.constraints.include->classes.size(), 2u);
  EXPECT_EQ(p.constraints.include->providers, std::vector<std::string>{"openai"});
  EXPECT_EQ(p.constraints.exclude.pools, std::vector<std::string>{"bad"});
  EXPECT_DOUBLE_EQ(*p.constraints.when.max_queue_depth, 8);
  EXPECT_DOUBLE_EQ(*p.constraints.when.max_kv_cache_usage, 0.9);
  EXPECT_DOUBLE_EQ(*p.constraints.when.max_predicted_ttft_s, 2.5);
  EXPECT_DOUBLE_EQ(*p.constraints.when.max_metrics_age_s, 10);
  ASSERT_EQ(p.alternatives.size(), 1u);
  EXPECT_EQ(p.alternatives[0].model, "small");
  EXPECT_DOUBLE_EQ(p.alternatives[0].tolerance_s, 0.25);
  EXPECT_EQ(p.on_tagger_failure, OnTaggerFailure::kIgnore);
}

TEST(PolicyLoader, DefaultsAreEnforceAndRejectOnTaggerFailure) {
  auto r = ParsePolicies(
      "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: x}\nspec: {}\n",
      "x.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->front().mode, Mode::kEnforce);
  EXPECT_EQ(r->front().priority, 0);
  EXPECT_EQ(r->front().on_tagger_failure, OnTaggerFailure::kReject);
}

Status ErrorOf(const std::string& spec) {
  std::string text =
      "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: x}\nspec:\n" +
      spec;
  return ParsePolicies(text, "policies/pii.yaml").status();
}

TEST(PolicyLoader, UnknownClassNamesFieldPath) {
  Status s = ErrorOf("  constraints:\n    exclude:\n      classes: [cloud]\n");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "policies/pii.yaml: spec.constraints.exclude.classes[0]: unknown class 'cloud' "
            "(expected local|provider)");
}

TEST(PolicyLoader, UnknownFieldsAreErrors) {
  Status s = ErrorOf("  priorty: 3\n");
  EXPECT_NE(s.message().find("spec.priorty: unknown field"), std::string::npos) << s.message();
  s = ErrorOf("  match: {tags: {oneOf: [a]}}\n");
  EXPECT_NE(s.message().find("spec.match.tags.oneOf: unknown field"), std::string::npos);
}

TEST(PolicyLoader, BadValuesAreErrors) {
  EXPECT_NE(ErrorOf("  mode: audit\n").message().find("spec.mode: unknown mode 'audit'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("  priority: high\n").message().find("spec.priority: expected an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf("  constraints: {when: {maxKvCacheUsage: 1.5}}\n")
                .message()
                .find("spec.constraints.when.maxKvCacheUsage: 1.5 out of range"),
            std::string::npos);
  EXPECT_NE(ErrorOf("  alternatives: [{toleranceSeconds: 1}]\n")
                .message()
                .find("spec.alternatives[0].model: required"),
            std::string::npos);
  EXPECT_NE(ErrorOf("  onTaggerFailure: maybe\n").message().find("spec.onTaggerFailure"),
            std::string::npos);
  EXPECT_NE(ErrorOf("  onNoCandidate: allow\n").message().find("spec.onNoCandidate"),
            std::string::npos);
}

TEST(PolicyLoader, ReportsEveryErrorAndChecksHeader) {
  auto r =
      ParsePolicies("apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {mode: x, foo: 1}\n", "a.yaml");
  ASSERT_FALSE(r.ok());
  const std::string m = r.status().message();
  EXPECT_NE(m.find("a.yaml: apiVersion: unsupported 'v1'"), std::string::npos) << m;
  EXPECT_NE(m.find("a.yaml: kind: unsupported 'Pod'"), std::string::npos);
  EXPECT_NE(m.find("a.yaml: metadata.name: required"), std::string::npos);
  EXPECT_NE(m.find("a.yaml: spec.foo: unknown field"), std::string::npos);
  EXPECT_NE(m.find("a.yaml: spec.mode: unknown mode 'x'"), std::string::npos);
}

TEST(PolicyLoader, MultiDocumentAndOrder) {
  auto r = ParsePolicies(R"(
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: b}
spec: {priority: 1}
---
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: a}
spec: {priority: 1}
---
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: z}
spec: {priority: 5, mode: bogus}
)",
                         "m.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("m.yaml: [document 2].spec.mode"), std::string::npos)
      << r.status().message();

  auto ok = ParsePolicies(R"(
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: b}
spec: {priority: 1}
---
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: a}
spec: {priority: 1}
---
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: z}
spec: {priority: 5}
)",
                          "m.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  SortPolicies(*ok);
  ASSERT_EQ(ok->size(), 3u);
  EXPECT_EQ((*ok)[0].name, "z");
  EXPECT_EQ((*ok)[1].name, "a");
  EXPECT_EQ((*ok)[2].name, "b");
}

TEST(PolicyLoader, SyntaxErrorNamesLine) {
  auto r = ParsePolicies("apiVersion: [unclosed\n", "s.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("s.yaml: line", 0), 0u) << r.status().message();
}

TEST(PolicyLoader, MissingFileIsNotFound) {
  std::vector<std::string> paths{"/nonexistent/policy.yaml"};
  auto r = LoadPolicySet(paths);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
}

// Found by fuzzing (fuzz/policy_yaml_fuzz.cc): yaml-cpp 0.7's LoadAll loops forever, growing
// memory, on a document whose first token is a flow entry. The loader refuses it at once.
TEST(PolicyLoader, DocumentStartingWithAFlowEntryIsAnErrorNotAHang) {
  for (const char* text : {",", " ,\n", "# comment\n ,", "a: 1\n---\n,\n"}) {
    auto r = ParsePolicies(text, "bad.yaml");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("bad.yaml: line "), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace kinference::policy
