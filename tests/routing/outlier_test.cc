#include "routing/outlier.h"

#include <gtest/gtest.h>

namespace kinference::routing {
namespace {

TEST(OutlierDetector, OneFailureEjectsAtOnceForAGrowingTime) {
  OutlierDetector d(OutlierConfig{.base_ejection_s = 1, .max_ejection_s = 5});
  EXPECT_FALSE(d.Ejected("a/0", 0));
  EXPECT_TRUE(d.Record("a/0", RequestResult::kConnectFailure, 10));
  EXPECT_TRUE(d.Ejected("a/0", 10.5));
  EXPECT_EQ(d.EjectedUntil("a/0", 10.5), std::optional<Seconds>(11));
  // Failures of requests sent before the ejection do not extend it.
  EXPECT_FALSE(d.Record("a/0", RequestResult::kReset, 10.6));
  EXPECT_EQ(d.EjectedUntil("a/0", 10.7), std::optional<Seconds>(11));
  EXPECT_FALSE(d.Ejected("a/0", 11));
  EXPECT_EQ(d.Unejected(11), std::vector<std::string>{"a/0"});
  EXPECT_TRUE(d.Unejected(11).empty());
  // The next request fails again: twice as long, then 4 s, then capped at 5 s.
  EXPECT_TRUE(d.Record("a/0", RequestResult::kServerError, 12));
  EXPECT_EQ(d.EjectedUntil("a/0", 12), std::optional<Seconds>(14));
  EXPECT_TRUE(d.Record("a/0", RequestResult::kServerError, 14));
  EXPECT_EQ(d.EjectedUntil("a/0", 14), std::optional<Seconds>(18));
  EXPECT_TRUE(d.Record("a/0", RequestResult::kServerError, 18));
  EXPECT_EQ(d.EjectedUntil("a/0", 18), std::optional<Seconds>(23));
  EXPECT_EQ(d.ejections_total("a/0"), 4u);
  // A success after the ejection resets the growth.
  EXPECT_FALSE(d.Record("a/0", RequestResult::kSuccess, 23));
  EXPECT_TRUE(d.Record("a/0", RequestResult::kConnectFailure, 30));
  EXPECT_EQ(d.EjectedUntil("a/0", 30), std::optional<Seconds>(31));
}

TEST(OutlierDetector, OtherResultsAndOtherEndpointsAreUnaffected) {
  OutlierDetector d;
  EXPECT_FALSE(d.Record("a/0", RequestResult::kOther, 1));
  EXPECT_FALSE(d.Record("a/0", RequestResult::kSuccess, 1));
  EXPECT_FALSE(d.Ejected("a/0", 1));
  d.Record("a/1", RequestResult::kReset, 1);
  EXPECT_TRUE(d.Ejected("a/1", 1));
  EXPECT_FALSE(d.Ejected("a/0", 1));
  // A success that was in flight while ejected does not cut the ejection short.
  EXPECT_FALSE(d.Record("a/1", RequestResult::kSuccess, 1.5));
  EXPECT_TRUE(d.Ejected("a/1", 1.5));
  d.Remove("a/1");
  EXPECT_FALSE(d.Ejected("a/1", 1.5));
}

}  // namespace
}  // namespace kinference::routing
