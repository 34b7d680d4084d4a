#include "policy/decision_log.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "policy_test_util.h"

namespace kinference::policy {
namespace {

using testing::Local;
using testing::Provider;
using testing::SetOf;

Policy NoProviders() {
  Policy p{.name = "no-providers", .priority = 5};
  p.match.tags.any_of = {"pii"};
  p.constraints.exclude.classes = {EndpointClass::kProvider};
  return p;
}

TEST(DecisionLog, RoutedHeaderRingJsonAndCounters) {
  auto set = SetOf({NoProviders()}, 7);
  RequestInfo req{.tenant = "acme", .model = "m", .tags = {"pii"}};
  std::vector<Candidate> c{Local("a/0", "m", "a", 0, 0.4),
                           Provider("openai/m", "m", "openai", 0.2)};
  auto ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  auto rec = RoutedRecord(*ev, req, 1.5, "req-1", "a/0", 0.4123);
  EXPECT_EQ(DecisionHeaderValue(rec),
            "generation=7; policies=no-providers; endpoint=a/0; predicted_ttft_s=0.412");

  req.model = "m";
  auto rejected_ev = Evaluate(set, req, std::vector<Candidate>{c[1]});
  ASSERT_FALSE(rejected_ev.ok());
  EXPECT_EQ(RejectingPolicy(rejected_ev.status()), "no-providers");
  auto rej = RejectedRecord(rejected_ev.status(), req, 7, 2.0, "req-2");
  EXPECT_EQ(DecisionHeaderValue(rej), "generation=7; policies=no-providers; outcome=rejected");

  DecisionLog log(2);
  log.Add(rec);
  log.Add(rej);
  log.Add(RoutedRecord(*ev, req, 3.0, "req-3", "a/0", 0.5));
  auto snap = log.Snapshot();
  ASSERT_EQ(snap.size(), 2u);  // bounded: the oldest fell out
  EXPECT_EQ(snap[0].request_id, "req-2");
  EXPECT_EQ(snap[1].request_id, "req-3");
  auto json = boost::json::parse(log.ToJson()).as_object();
  const auto& ds = json.at("decisions").as_array();
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].at("outcome").as_string(), "rejected");
  EXPECT_EQ(ds[1].at("endpoint").as_string(), "a/0");
  EXPECT_EQ(ds[1].at("removed").as_array()[0].at("reason").as_string(),
            "excluded by class provider");
  EXPECT_EQ(ds[1].at("generation").to_number<uint64_t>(), 7u);

  PolicyCounters counters;
  counters.Record(rec);
  counters.Record(rej);
  auto counts = counters.Snapshot();
  EXPECT_EQ((counts[{"no-providers", "matched"}]), 2u);  // the rejected request matched too
  EXPECT_EQ((counts[{"no-providers", "removed"}]), 1u);
  EXPECT_EQ((counts[{"no-providers", "rejected"}]), 1u);
}

TEST(DecisionLog, HeaderWithoutPoliciesAndWithAlternative) {
  DecisionRecord r{.model = "big",
                   .chosen_model = "small",
                   .generation = 1,
                   .outcome = "routed",
                   .endpoint = "s/0"};
  EXPECT_EQ(DecisionHeaderValue(r), "generation=1; policies=-; model=small; endpoint=s/0");
  EXPECT_EQ(RejectingPolicy(Status(ErrorCode::kUnavailable, "no endpoint")), "");
}

TEST(PolicyCounters, RemovedOncePerRequestRejectedAlsoMatched) {
  Policy p{.name = "locals-only"};
  p.constraints.exclude.classes = {EndpointClass::kProvider};
  Policy other{.name = "other"};  // matches every request, removes nothing
  auto set = SetOf({p, other});
  RequestInfo req{.model = "m"};
  std::vector<Candidate> c{Local("a/0", "m", "a", 0, 0.4), Provider("x/m", "m", "x", 0.2),
                           Provider("y/m", "m", "y", 0.2)};
  auto ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->removed.size(), 2u);  // two endpoints removed by one policy
  PolicyCounters counters;
  counters.Record(RoutedRecord(*ev, req, 1, "r1", "a/0", 0.4));
  auto only_providers = std::vector<Candidate>{c[1], c[2]};
  auto rejected = Evaluate(set, req, only_providers);
  ASSERT_FALSE(rejected.ok());
  auto rec = RejectedRecord(rejected.status(), req, 3, 2, "r2", MatchingPolicies(set, req));
  EXPECT_EQ(rec.rejected_by, "locals-only");
  counters.Record(rec);
  auto counts = counters.Snapshot();
  EXPECT_EQ((counts[{"locals-only", "removed"}]), 1u);
  EXPECT_EQ((counts[{"locals-only", "matched"}]), 2u);
  EXPECT_EQ((counts[{"other", "matched"}]), 2u);
  EXPECT_EQ((counts[{"locals-only", "rejected"}]), 1u);
  EXPECT_EQ((counts[{"other", "rejected"}]), 0u);
}

TEST(DecisionLog, DryRunRecordsWouldAddAlternativesAndFilter) {
  Policy p{.name = "try-small", .mode = Mode::kDryRun};
  p.alternatives = {{"small", 0.5}};
  auto set = SetOf({p});
  RequestInfo req{.tenant = "acme", .model = "m"};
  std::vector<Candidate> c{Local("a/0", "m", "a", 0, 0.4)};
  auto ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  DecisionLog log;
  log.Add(RoutedRecord(*ev, req, 1, "r1", "a/0", 0.4));
  req.tenant = "other";
  log.Add(RoutedRecord(*ev, req, 2, "r2", "a/0", 0.4));
  auto all = boost::json::parse(log.ToJson()).at("decisions").as_array();
  ASSERT_EQ(all.size(), 2u);
  auto adds = all[0].at("dry_run").as_array()[0].at("would_add_alternatives").as_array();
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].at("model").as_string(), "small");
  EXPECT_DOUBLE_EQ(adds[0].at("tolerance_s").as_double(), 0.5);
  auto acme =
      boost::json::parse(log.ToJson([](const DecisionRecord& r) { return r.tenant == "acme"; }))
          .at("decisions")
          .as_array();
  ASSERT_EQ(acme.size(), 1u);
  EXPECT_EQ(acme[0].at("request_id").as_string(), "r1");
}

}  // namespace
}  // namespace kinference::policy
