#include "accounting/usage_record.h"

#include <gtest/gtest.h>

namespace kinference::accounting {
namespace {

TEST(UsageRecord, RoundTripsThroughItsJsonLine) {
  UsageRecord r{.record_id = MakeRecordId(0x0123456789abcdefULL, 42),
                .time_ms = 1741608000123,
                .request_id = "req-1",
                .tenant = "acme",
                .front = "anthropic",
                .requested_model = "claude",
                .served_model = "llama",
                .provider = "pool-a",
                .endpoint = "pool-a/0",
                .tokens = {.prompt = 10, .cached = 4, .cache_creation = 2, .completion = 7},
                .usage_estimated = true,
                .ttft_ms = 12.5,
                .e2e_ms = 99.25,
                .outcome = "cancelled",
                .status = 200,
                .policy_decision = "allowed;policy=p",
                .cost_nano_usd = 123,
                .priced = true,
                .gateway = "host:1"};
  EXPECT_EQ(r.record_id, "0123456789abcdef000000000000002a");
  std::string line = ToJsonLine(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = FromJsonLine(line);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, r);
}

TEST(UsageRecord, RefusesALineCutShort) {
  UsageRecord r{.record_id = "ab", .tenant = "t"};
  std::string line = ToJsonLine(r);
  EXPECT_FALSE(FromJsonLine(line.substr(0, line.size() / 2)).ok());
  EXPECT_FALSE(FromJsonLine("{}").ok());
}

}  // namespace
}  // namespace kinference::accounting
