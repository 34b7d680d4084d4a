// spec.requestPriority: the admission priority of the requests a policy matches.
#include <gtest/gtest.h>

#include "policy/evaluate.h"
#include "policy/policy.h"
#include "policy_test_util.h"

namespace kinference::policy {
namespace {

using testing::Local;
using testing::SetOf;

TEST(RequestPriority, FirstMatchingEnforcePolicyThatSetsItWins) {
  Policy high{.name = "a-high", .priority = 10};
  high.match.tenants = {"gold"};
  high.request_priority = 100;
  Policy low{.name = "b-low", .priority = 5};
  low.request_priority = -5;
  Policy dry{.name = "c-dry", .priority = 50, .mode = Mode::kDryRun};
  dry.request_priority = 999;
  std::vector<Candidate> c{Local("a/0", "m", "a", 0, 0.1)};
  auto ev = Evaluate(SetOf({high, low, dry}), RequestInfo{.tenant = "gold", .model = "m"}, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->request_priority, std::optional<int64_t>(100));
  ev = Evaluate(SetOf({high, low, dry}), RequestInfo{.tenant = "free", .model = "m"}, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->request_priority, std::optional<int64_t>(-5));
  ev = Evaluate(SetOf({dry}), RequestInfo{.tenant = "free", .model = "m"}, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_FALSE(ev->request_priority.has_value());  // dry-run policies only report
}

TEST(RequestPriority, LoaderChecksTheRange) {
  auto doc = [](const std::string& v) {
    return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: p}\n"
           "spec: {requestPriority: " +
           v + "}\n";
  };
  auto r = ParsePolicies(doc("7"), "p.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->front().request_priority, std::optional<int64_t>(7));
  r = ParsePolicies(doc("1001"), "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spec.requestPriority: 1001 out of range (-1000..1000)"),
            std::string::npos)
      << r.status().message();
  r = ParsePolicies(doc("high"), "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spec.requestPriority: expected an integer"),
            std::string::npos);
}

}  // namespace
}  // namespace kinference::policy
