#include "k8s/lease.h"

#include <gtest/gtest.h>

#include "k8s/resource.h"

namespace kinference::k8s {
namespace {

namespace json = boost::json;
using Action = LeaderElection::Attempt::Action;

LeaderElectionConfig Config(const std::string& identity) {
  LeaderElectionConfig c;
  c.ns = "ns";
  c.lease_name = "kinference-controller";
  c.identity = identity;
  return c;  // 15 s lease, 10 s renew deadline, 2 s retry
}

json::object Lease(const std::string& holder, int64_t duration, const std::string& renew,
                   int64_t transitions = 0) {
  return json::object{{"metadata", json::object{{"name", "kinference-controller"},
                                                {"namespace", "ns"},
                                                {"resourceVersion", "1"}}},
                      {"spec", json::object{{"holderIdentity", holder},
                                            {"leaseDurationSeconds", duration},
                                            {"renewTime", renew},
                                            {"leaseTransitions", transitions}}}};
}

TEST(LeaderElectionTest, CreatesAMissingLeaseHoldingIt) {
  LeaderElection e(Config("a"));
  auto at = e.Decide(nullptr, 0, "T0");
  ASSERT_EQ(at.action, Action::kCreate);
  EXPECT_EQ(StringAt(at.lease, {"spec", "holderIdentity"}), "a");
  EXPECT_EQ(at.lease.at("spec").at("leaseDurationSeconds").as_int64(), 15);
  EXPECT_EQ(StringAt(at.lease, {"metadata", "namespace"}), "ns");
  EXPECT_FALSE(e.IsLeader(0));
  e.OnWriteSucceeded(0.1);
  EXPECT_TRUE(e.IsLeader(0.1));
}

TEST(LeaderElectionTest, WaitsWhileAnotherHoldersRecordKeepsChangingAndTakesOverOnceItStops) {
  LeaderElection e(Config("b"));
  auto lease = Lease("a", 15, "T0");
  EXPECT_EQ(e.Decide(&lease, 100, "W").action, Action::kNone);
  // The holder renews: the record changes, so expiry counts from this observation.
  lease = Lease("a", 15, "T1");
  EXPECT_EQ(e.Decide(&lease, 110, "W").action, Action::kNone);
  EXPECT_EQ(e.Decide(&lease, 124.9, "W").action, Action::kNone);
  // 15 s after the last change was seen: expired, take it over.
  auto at = e.Decide(&lease, 125.1, "T2");
  ASSERT_EQ(at.action, Action::kUpdate);
  EXPECT_EQ(StringAt(at.lease, {"spec", "holderIdentity"}), "b");
  EXPECT_EQ(StringAt(at.lease, {"spec", "acquireTime"}), "T2");
  EXPECT_EQ(at.lease.at("spec").at("leaseTransitions").as_int64(), 1);
  // The read resourceVersion goes with the update (409 on a race).
  EXPECT_EQ(ResourceVersionOf(at.lease), "1");
}

TEST(LeaderElectionTest, ExpiryIsJudgedByOurClockNotTheRenewTimeText) {
  LeaderElection e(Config("b"));
  // A renewTime far in the past by wall clock means nothing: we have just seen the record.
  auto lease = Lease("a", 15, "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(e.Decide(&lease, 1000, "W").action, Action::kNone);
}

TEST(LeaderElectionTest, TheHolderRenewsWithoutATransitionAndLosesLeadershipAfterTheRenewDeadline) {
  LeaderElection e(Config("a"));
  auto lease = Lease("a", 15, "T0", 3);
  auto at = e.Decide(&lease, 50, "T1");
  ASSERT_EQ(at.action, Action::kUpdate);
  EXPECT_EQ(at.lease.at("spec").at("leaseTransitions").as_int64(), 3);
  EXPECT_EQ(StringAt(at.lease, {"spec", "renewTime"}), "T1");
  e.OnWriteSucceeded(50);
  EXPECT_TRUE(e.IsLeader(59.9));
  // Renewals fail (409, API server away): leadership ends at the renew deadline (10 s),
  // before the lease (15 s) lets anyone else take over.
  e.OnWriteFailed();
  EXPECT_FALSE(e.IsLeader(60.1));
}

TEST(LeaderElectionTest, AReleasedLeaseIsTakenAtTheNextAttempt) {
  LeaderElection a(Config("a"));
  auto lease = Lease("a", 15, "T0");
  auto at = a.Decide(&lease, 0, "T1");
  a.OnWriteSucceeded(0);
  auto released = a.Release(at.lease, "T2");
  ASSERT_TRUE(released);
  EXPECT_EQ(StringAt(*released, {"spec", "holderIdentity"}), "");
  EXPECT_EQ(released->at("spec").at("leaseDurationSeconds").as_int64(), 1);
  LeaderElection b(Config("b"));
  auto take = b.Decide(&*released, 1000, "T3");
  EXPECT_EQ(take.action, Action::kUpdate);
  EXPECT_EQ(StringAt(take.lease, {"spec", "holderIdentity"}), "b");
  // Nothing to release for a non-holder.
  LeaderElection c(Config("c"));
  EXPECT_FALSE(c.Release(*released, "T4"));
}

TEST(LeaseTimeTest, FormatsMicroTimeAndTime) {
  auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1700000000123456));
  EXPECT_EQ(FormatMicroTime(t), "2023-11-14T22:13:20.123456Z");
  EXPECT_EQ(FormatTime(t), "2023-11-14T22:13:20Z");
}

}  // namespace
}  // namespace kinference::k8s
