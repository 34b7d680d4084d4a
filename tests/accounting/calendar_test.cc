#include "accounting/calendar.h"

#include <gtest/gtest.h>

namespace kinference::accounting {
namespace {

TEST(Calendar, DayAndMonthWindowsFollowUtcMidnightAndTheFirstOfTheMonth) {
  const double t = *ParseTime("2024-02-29T23:59:59Z");
  EXPECT_EQ(DayStart(DayIndex(t)), *ParseTime("2024-02-29"));
  EXPECT_EQ(DayStart(DayIndex(t) + 1), *ParseTime("2024-03-01T00:00:00Z"));
  EXPECT_EQ(MonthStart(MonthIndex(t)), *ParseTime("2024-02-01"));
  EXPECT_EQ(MonthStart(MonthIndex(t) + 1), *ParseTime("2024-03-01"));
  EXPECT_EQ(MonthStart(MonthIndex(*ParseTime("2024-12-15")) + 1), *ParseTime("2025-01-01"));
  EXPECT_EQ(MonthIndex(*ParseTime("2025-01-01")) - MonthIndex(*ParseTime("2024-12-31")), 1);
}

TEST(Calendar, FormatsAndParsesRfc3339) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(1738367999.25, true), "2025-01-31T23:59:59.250Z");
  EXPECT_EQ(*ParseTime("2025-01-31T23:59:59Z"), 1738367999);
  EXPECT_EQ(*ParseTime("2025-02-01T01:59:59+02:00"), 1738367999);
  EXPECT_EQ(*ParseTime("2025-01-31t23:59:59.5z"), 1738367999.5);
  EXPECT_EQ(*ParseTime("1738367999"), 1738367999);
  for (const char* bad : {"", "2025-13-01", "2025-02-30", "2025-01-31T23:59:59", "yesterday",
                          "2025-01-31T24:00:00Z", "2025-01-31T23:59:59Zjunk"})
    EXPECT_FALSE(ParseTime(bad).has_value()) << bad;
}

}  // namespace
}  // namespace kinference::accounting
