#include "accounting/money.h"

#include <gtest/gtest.h>

namespace kinference::accounting {
namespace {

TEST(ParseUsd, ReadsDecimalsExactlyToNanoUsd) {
  EXPECT_EQ(*ParseUsd("3"), 3'000'000'000);
  EXPECT_EQ(*ParseUsd("0.075"), 75'000'000);
  EXPECT_EQ(*ParseUsd("0.0375"), 37'500'000);
  EXPECT_EQ(*ParseUsd("12.000000001"), 12'000'000'001);
  EXPECT_EQ(*ParseUsd("0"), 0);
}

TEST(ParseUsd, RefusesWhatIsNotAPlainNonNegativeDecimal) {
  for (const char* bad : {"", "-1", "1e3", ".5", "5.", "1.0000000001", "abc", "1,5", "2000000000"})
    EXPECT_FALSE(ParseUsd(bad).ok()) << bad;
}

TEST(FormatUsd, WritesExactDecimalWithoutTrailingZeros) {
  EXPECT_EQ(FormatUsd(0), "0");
  EXPECT_EQ(FormatUsd(1), "0.000000001");
  EXPECT_EQ(FormatUsd(123'000), "0.000123");
  EXPECT_EQ(FormatUsd(12'500'000'000), "12.5");
  EXPECT_EQ(FormatUsd(-500'000'000), "-0.5");
  EXPECT_EQ(*ParseUsd(FormatUsd(987'654'321'123)), 987'654'321'123);
}

}  // namespace
}  // namespace kinference::accounting
