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

}  // namespace
}  // namespace kinference::policy
