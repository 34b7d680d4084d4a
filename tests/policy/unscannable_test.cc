// onUnscannableContent: a policy with tag conditions may treat content the taggers cannot
// read (images, audio, files) as carrying its tags, failing closed.
#include <gtest/gtest.h>

#include "policy/evaluate.h"
#include "policy/policy.h"
#include "policy_test_util.h"

namespace kinference::policy {
namespace {

using testing::Endpoints;
using testing::Local;
using testing::Provider;
using testing::SetOf;
using V = std::vector<std::string>;

Policy PiiLocalOnly(OnUnscannableContent on) {
  Policy p{.name = "pii-local-only"};
  p.match.tags.any_of = {"pii"};
  p.constraints.include = Selector{.classes = {EndpointClass::kLocal}};
  p.on_unscannable_content = on;
  return p;
}

std::vector<Candidate> Both() {
  return {Local("a/0", "m", "a", 0, 0.5), Provider("openai/m", "m", "openai", 0.1)};
}

TEST(UnscannableContent, TreatAsTaggedAppliesTagPoliciesToImages) {
  RequestInfo req{.model = "m", .unscannable = {"image"}};
  auto ev = Evaluate(SetOf({PiiLocalOnly(OnUnscannableContent::kTreatAsTagged)}), req, Both());
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->matched, V{"pii-local-only"});
  EXPECT_EQ(Endpoints(ev->remaining), V{"a/0"});
  // Without unscannable content the same untagged request is not matched.
  req.unscannable.clear();
  ev = Evaluate(SetOf({PiiLocalOnly(OnUnscannableContent::kTreatAsTagged)}), req, Both());
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->matched.empty());
  EXPECT_EQ(Endpoints(ev->remaining), (V{"a/0", "openai/m"}));
}

TEST(UnscannableContent, IgnoreJudgesOnTheTextTagsOnly) {
  RequestInfo req{.model = "m", .unscannable = {"audio", "file"}};
  auto ev = Evaluate(SetOf({PiiLocalOnly(OnUnscannableContent::kIgnore)}), req, Both());
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->matched.empty());
  EXPECT_EQ(Endpoints(ev->remaining), (V{"a/0", "openai/m"}));
}

TEST(UnscannableContent, NoneOfFailsAndAllOfHolds) {
  Policy none{.name = "clean-may-leave"};
  none.match.tags.none_of = {"pii"};
  none.on_unscannable_content = OnUnscannableContent::kTreatAsTagged;
  Policy all{.name = "all"};
  all.match.tags.all_of = {"pii", "finance"};
  all.on_unscannable_content = OnUnscannableContent::kTreatAsTagged;
  RequestInfo req{.model = "m", .unscannable = {"file"}};
  EXPECT_FALSE(Matches(none, req));
  EXPECT_TRUE(Matches(all, req));
  // Policies without tag conditions are unaffected.
  Policy plain{.name = "plain"};
  plain.match.tenants = {"acme"};
  plain.on_unscannable_content = OnUnscannableContent::kTreatAsTagged;
  EXPECT_FALSE(Matches(plain, req));
}

TEST(UnscannableContent, LoaderReadsTheOptionStrictly) {
  auto doc = [](const std::string& v) {
    return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: p}\n"
           "spec:\n  match: {tags: {anyOf: [pii]}}\n  onUnscannableContent: " +
           v + "\n";
  };
  auto r = ParsePolicies(doc("treatAsTagged"), "p.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->front().on_unscannable_content, OnUnscannableContent::kTreatAsTagged);
  r = ParsePolicies(doc("ignore"), "p.yaml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->front().on_unscannable_content, OnUnscannableContent::kIgnore);
  r = ParsePolicies(doc("reject"), "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spec.onUnscannableContent: unknown value 'reject' "
                                      "(expected ignore|treatAsTagged)"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace kinference::policy
