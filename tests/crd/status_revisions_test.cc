#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "crd/revisions.h"
#include "crd/status.h"
#include "k8s/resource.h"

namespace kinference::crd {
namespace {

namespace json = boost::json;

json::object Policy(const std::string& spec, int generation = 1) {
  auto o = json::parse(R"({"metadata":{"name":"p","namespace":"ns","uid":"uid-1","generation":)" +
                       std::to_string(generation) + R"(},"spec":)" + spec + "}")
               .as_object();
  return o;
}

json::object Revision(const std::string& name, int64_t n, const std::string& spec) {
  return json::parse(R"({"metadata":{"name":")" + name +
                     R"(","namespace":"ns","labels":{"kinference.io/policy-uid":"uid-1"}},
                         "data":{"spec":)" +
                     spec + R"(},"revision":)" + std::to_string(n) + "}")
      .as_object();
}

TEST(StatusTest, LastTransitionTimeChangesOnlyWithTheStatus) {
  auto obj = Policy("{}", 2);
  auto s1 = BuildStatus(obj, {{"Accepted", true, "Accepted", "ok"}}, "T1");
  EXPECT_EQ(s1.at("observedGeneration").as_int64(), 2);
  obj["status"] = s1;
  EXPECT_TRUE(StatusUnchanged(obj, BuildStatus(obj, {{"Accepted", true, "Accepted", "ok"}}, "T2")));
  auto s2 = BuildStatus(obj, {{"Accepted", true, "Accepted", "still ok"}}, "T2");
  EXPECT_FALSE(StatusUnchanged(obj, s2));
  EXPECT_EQ(k8s::StringAt(s2.at("conditions").as_array()[0].as_object(), {"lastTransitionTime"}),
            "T1");
  auto s3 = BuildStatus(obj, {{"Accepted", false, "Invalid", "spec.mode: bad"}}, "T3");
  EXPECT_EQ(k8s::StringAt(s3.at("conditions").as_array()[0].as_object(), {"lastTransitionTime"}),
            "T3");
  // A new generation is news even with the same conditions.
  obj["metadata"].as_object()["generation"] = 3;
  EXPECT_FALSE(
      StatusUnchanged(obj, BuildStatus(obj, {{"Accepted", true, "Accepted", "ok"}}, "T4")));
}

TEST(StatusTest, OtherWritersConditionsAndExtraFieldsAreKept) {
  auto obj = Policy("{}");
  obj["status"] = json::parse(
      R"({"conditions":[{"type":"Ready","status":"True","reason":"R","message":"",
                         "lastTransitionTime":"T0"}]})");
  auto s = BuildStatus(obj, {{"Accepted", true, "Accepted", "ok"}}, "T1",
                       json::object{{"currentRevision", 4}});
  ASSERT_EQ(s.at("conditions").as_array().size(), 2u);
  EXPECT_EQ(s.at("currentRevision").as_int64(), 4);
  auto found = FindCondition(obj, "Ready");
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->status);
}

TEST(RevisionsTest, CanonicalJsonIgnoresKeyOrder) {
  EXPECT_EQ(CanonicalJson(json::parse(R"({"b":1,"a":{"d":[1,{"f":2,"e":3}],"c":null}})")),
            R"({"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1})");
  EXPECT_EQ(SpecHash(json::parse(R"({"a":1,"b":2})")), SpecHash(json::parse(R"({"b":2,"a":1})")));
  EXPECT_EQ(SpecHash(json::parse("{}")).size(), 16u);
}

TEST(RevisionsTest, FirstSpecCreatesRevisionOneOwnedByThePolicy) {
  auto plan = PlanRevisions(Policy(R"({"priority":1})"), {});
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.current_revision, 1);
  const auto& r = *plan.create;
  EXPECT_EQ(RevisionNumber(r), 1);
  EXPECT_EQ(k8s::NameOf(r), "p-" + SpecHash(json::parse(R"({"priority":1})")));
  EXPECT_EQ(k8s::LabelOf(r, kPolicyUidLabel), "uid-1");
  const auto& owner = r.at("metadata").at("ownerReferences").as_array()[0].as_object();
  EXPECT_EQ(k8s::StringAt(owner, {"uid"}), "uid-1");
  EXPECT_EQ(k8s::StringAt(owner, {"kind"}), "InferencePolicy");
  EXPECT_TRUE(owner.at("controller").as_bool());
  EXPECT_EQ(CanonicalJson(*RevisionSpec(r)), R"({"priority":1})");
}

TEST(RevisionsTest, TheCurrentSpecAlreadyNewestIsNoChange) {
  auto plan = PlanRevisions(Policy(R"({"priority":2})"), {Revision("p-a", 1, R"({"priority":1})"),
                                                          Revision("p-b", 2, R"({"priority":2})")});
  EXPECT_FALSE(plan.create);
  EXPECT_TRUE(plan.renumber.empty());
  EXPECT_TRUE(plan.remove.empty());
  EXPECT_EQ(plan.current_revision, 2);
}

TEST(RevisionsTest, ReturningToAnEarlierSpecRenumbersItInsteadOfCopying) {
  auto plan = PlanRevisions(Policy(R"({"priority":1})"), {Revision("p-a", 1, R"({"priority":1})"),
                                                          Revision("p-b", 2, R"({"priority":2})")});
  EXPECT_FALSE(plan.create);
  EXPECT_EQ(plan.renumber, "p-a");
  EXPECT_EQ(plan.renumber_to, 3);
  EXPECT_EQ(plan.current_revision, 3);
}

TEST(RevisionsTest, HistoryBeyondTheLimitLosesItsOldestButNeverTheCurrent) {
  std::vector<json::object> revs;
  for (int i = 1; i <= 4; ++i)
    revs.push_back(
        Revision("p-" + std::to_string(i), i, R"({"priority":)" + std::to_string(i) + "}"));
  auto plan = PlanRevisions(Policy(R"({"priority":9})"), revs, 3);
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.current_revision, 5);
  EXPECT_EQ(plan.remove, (std::vector<std::string>{"p-1", "p-2"}));
  // The current one is old: it is renumbered, others pruned around it.
  auto back = PlanRevisions(Policy(R"({"priority":1})"), revs, 2);
  EXPECT_EQ(back.renumber, "p-1");
  EXPECT_EQ(back.remove, (std::vector<std::string>{"p-2", "p-3"}));
}

}  // namespace
}  // namespace kinference::crd
