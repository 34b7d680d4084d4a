// Policies naming pools, providers or alternative models the gateway config does not
// have refuse start-up, and a reload to such a set keeps the last valid one.
#include "policy_fixture.h"

namespace kinference::gateway {
namespace {

using namespace policy_testing;  // NOLINT: the shared fixture and helpers

TEST_F(PolicyProxyTest, UnknownReferencesFailStartupAndReload) {
  FakeUpstream& local = Fake();
  std::string path = Write("p.yaml", IncludePolicy("to-ghost", "{providers: [ghost]}"));
  GatewayConfig c = Base({path});
  AddPool(c, "local", "m", local);
  try {
    Gateway g(io(), c);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "spec.constraints.include.providers[0]: unknown provider 'ghost'"),
              std::string::npos)
        << e.what();
  }
  Write("p.yaml", IncludePolicy("to-local", "{pools: [local]}"));
  Start(c);
  EXPECT_EQ(Generation(), 1);
  Write("p.yaml", IncludePolicy("to-typo", "{pools: [locl]}") + "# edited\n");
  ASSERT_TRUE(WaitUntil([&] { return Metric("\nkinference_policy_reload_failures_total") == 1; }));
  EXPECT_EQ(Generation(), 1);
  auto r = Post(Chat("m", "hello"));
  EXPECT_NE(DecisionHeader(r).find("generation=1; policies=to-local"), std::string::npos)
      << DecisionHeader(r);
  // An alternative no endpoint serves is rejected too; match.models only warns.
  Write("p.yaml",
        "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: alt}\n"
        "spec: {alternatives: [{model: nowhere}]}\n");
  ASSERT_TRUE(WaitUntil([&] { return Metric("\nkinference_policy_reload_failures_total") == 2; }));
  Write("p.yaml",
        "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: ahead}\n"
        "spec: {match: {models: [next-year]}}\n");
  ASSERT_TRUE(WaitUntil([&] { return Generation() == 2; }));
}

}  // namespace
}  // namespace kinference::gateway
