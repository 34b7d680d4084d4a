// CheckReferences: policies naming pools, providers and models a gateway does not have.
#include "policy/references.h"

#include <gtest/gtest.h>

#include "policy_test_util.h"

namespace kinference::policy {
namespace {

using testing::PolicyDoc;
using testing::SetOf;

TEST(PolicyReferences, UnknownPoolsProvidersAlternativesAreErrorsModelsWarnings) {
  auto parsed = ParsePolicies(
      PolicyDoc("r",
                "{match: {models: [future]}, constraints: {include: {pools: [a, nope]}, "
                "exclude: {providers: [gone]}, prefer: {pools: [a]}}, "
                "alternatives: [{model: small}, {model: missing}]}"),
      "r.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  PolicySet set = SetOf(*parsed);
  KnownNames known{{"a"}, {"openai"}, {"m", "small"}};
  ReferenceReport r = CheckReferences(set, known);
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0],
            "r.yaml: policy r: spec.constraints.include.pools[1]: unknown pool 'nope' (gateway "
            "has: a)");
  EXPECT_EQ(r.errors[1],
            "r.yaml: policy r: spec.constraints.exclude.providers[0]: unknown provider 'gone' "
            "(gateway has: openai)");
  EXPECT_NE(r.errors[2].find("spec.alternatives[1].model: no endpoint serves model 'missing'"),
            std::string::npos);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("spec.match.models[0]: no endpoint serves model 'future'"),
            std::string::npos);
  known.pools.insert("nope");
  known.providers.insert("gone");
  known.models.insert("missing");
  EXPECT_TRUE(CheckReferences(set, known).errors.empty());
}

}  // namespace
}  // namespace kinference::policy
