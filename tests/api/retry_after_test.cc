#include "api/retry_after.h"

#include <gtest/gtest.h>

namespace kinference::api {
namespace {

// 2026-12-03 16:00:00 UTC.
constexpr int64_t kNow = 1796313600;

TEST(RetryAfterTest, ImfFixdateIsUnixSeconds) {
  EXPECT_EQ(ParseImfFixdate("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
  EXPECT_EQ(ParseImfFixdate("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);  // RFC 9110's example
  EXPECT_EQ(ParseImfFixdate("Thu, 03 Dec 2026 16:00:00 GMT"), kNow);
  EXPECT_EQ(ParseImfFixdate("Sunday, 06-Nov-94 08:49:37 GMT"), std::nullopt);  // RFC 850
  EXPECT_EQ(ParseImfFixdate("Sun Nov  6 08:49:37 1994"), std::nullopt);        // asctime
  EXPECT_EQ(ParseImfFixdate("Sun, 06 Nov 1994 08:49:37 UTC"), std::nullopt);
  EXPECT_EQ(ParseImfFixdate("Sun, 06 Nov 1994 25:49:37 GMT"), std::nullopt);
}

TEST(RetryAfterTest, SecondsAreForwardedRoundedUp) {
  EXPECT_EQ(ParseRetryDelay("7", "", kNow)->seconds, 7);
  EXPECT_EQ(ParseRetryDelay(" 0 ", "", kNow)->seconds, 0);
  EXPECT_EQ(ParseRetryDelay("1.5", "", kNow)->seconds, 2);  // the SDKs accept floats
  EXPECT_EQ(ParseRetryDelay("2.000", "", kNow)->seconds, 2);
  EXPECT_FALSE(ParseRetryDelay("7", "", kNow)->milliseconds);
}

TEST(RetryAfterTest, DateBecomesSecondsFromNow) {
  EXPECT_EQ(ParseRetryDelay("Thu, 03 Dec 2026 16:00:30 GMT", "", kNow)->seconds, 30);
  EXPECT_EQ(ParseRetryDelay("Thu, 03 Dec 2026 15:59:00 GMT", "", kNow)->seconds, 0);  // past
}

TEST(RetryAfterTest, MillisecondsAreKeptAndGiveSecondsWhenAlone) {
  auto d = ParseRetryDelay("", "1500", kNow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->seconds, 2);
  EXPECT_EQ(d->milliseconds, 1500);
  auto both = ParseRetryDelay("3", "2500.5", kNow);
  EXPECT_EQ(both->seconds, 3);  // Retry-After as sent
  EXPECT_EQ(both->milliseconds, 2501);
  auto headers = RetryDelayHeaders(*both);
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[0], std::make_pair(std::string("Retry-After"), std::string("3")));
  EXPECT_EQ(headers[1], std::make_pair(std::string("retry-after-ms"), std::string("2501")));
}

TEST(RetryAfterTest, LongDelaysAreCappedAtTheBound) {
  EXPECT_EQ(ParseRetryDelay("86400", "", kNow)->seconds, kMaxRetryAfterS);
  EXPECT_EQ(ParseRetryDelay("99999999999999999999999999", "", kNow)->seconds, kMaxRetryAfterS);
  EXPECT_EQ(ParseRetryDelay("Fri, 01 Jan 2100 00:00:00 GMT", "", kNow)->seconds, kMaxRetryAfterS);
  EXPECT_EQ(ParseRetryDelay("", "1e30", kNow), std::nullopt);  // no exponents
  EXPECT_EQ(ParseRetryDelay("", "99999999999", kNow)->milliseconds, kMaxRetryAfterS * 1000);
}

TEST(RetryAfterTest, AnythingElseIsDropped) {
  for (const char* bad : {"", "soon", "-1", "+5", "5s", "1.2.3", ".5", "inf", "NaN", "0x10",
                          "5\r\nSet-Cookie: a=b", "5, 6"}) {
    EXPECT_EQ(ParseRetryDelay(bad, "", kNow), std::nullopt) << bad;
    EXPECT_EQ(ParseRetryDelay("", bad, kNow), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseRetryDelay(std::string(kMaxRetryHeaderChars + 1, '1'), "", kNow), std::nullopt);
  // An invalid retry-after-ms does not spoil a valid Retry-After.
  auto d = ParseRetryDelay("4", "later", kNow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->seconds, 4);
  EXPECT_FALSE(d->milliseconds);
}

}  // namespace
}  // namespace kinference::api
