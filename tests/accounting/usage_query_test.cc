#include "accounting/usage_query.h"

#include <gtest/gtest.h>

#include "accounting/calendar.h"

namespace kinference::accounting {
namespace {

const double kNow = *ParseTime("2025-03-10T12:00:00Z");

TEST(ParseUsageQuery, DefaultsToTheLastDayAsJsonWithOneTotal) {
  auto q = ParseUsageQuery({}, kNow);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->to_ms, static_cast<int64_t>(kNow) * 1000);
  EXPECT_EQ(q->from_ms, q->to_ms - 86'400'000);
  EXPECT_TRUE(q->group_by.empty());
  EXPECT_EQ(q->format, UsageFormat::kJson);
}

TEST(ParseUsageQuery, ReadsRangeGroupsFiltersAndFormat) {
  auto q = ParseUsageQuery({{"from", "2025-03-01"},
                            {"to", "2025-03-08T00:00:00Z"},
                            {"group_by", "tenant,model,day"},
                            {"tenant", "acme"},
                            {"model", "llama"},
                            {"format", "csv"}},
                           kNow);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->from_ms, static_cast<int64_t>(*ParseTime("2025-03-01")) * 1000);
  EXPECT_EQ(q->group_by, (std::vector<GroupBy>{GroupBy::kTenant, GroupBy::kModel, GroupBy::kDay}));
  EXPECT_EQ(q->tenant, "acme");
  EXPECT_EQ(q->model, "llama");
  EXPECT_EQ(q->format, UsageFormat::kCsv);
}

TEST(ParseUsageQuery, RefusesBadParametersNamingThem) {
  struct Case {
    std::map<std::string, std::string> params;
    std::string param;
  };
  for (const auto& c : std::vector<Case>{{{{"from", "last week"}}, "from"},
                                         {{{"to", "2025-13-01"}}, "to"},
                                         {{{"from", "2025-03-02"}, {"to", "2025-03-01"}}, "from"},
                                         {{{"group_by", "tenant,week"}}, "group_by"},
                                         {{{"group_by", "day,day"}}, "group_by"},
                                         {{{"format", "xml"}}, "format"},
                                         {{{"limit", "10"}}, "limit"}}) {
    auto q = ParseUsageQuery(c.params, kNow);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(q.status().param(), c.param);
  }
}

TEST(AggregateSql, BindsEveryValueAsAParameterAndGroupsByWhitelistedColumns) {
  UsageQuery q;
  q.from_ms = 1;
  q.to_ms = 2;
  q.group_by = {GroupBy::kTenant, GroupBy::kHour};
  q.tenant = "x' OR 1=1 --";
  Sql sql = AggregateSql(q);
  EXPECT_EQ(sql.text.find("x'"), std::string::npos);
  EXPECT_NE(sql.text.find("tenant = $3"), std::string::npos);
  EXPECT_NE(sql.text.find("GROUP BY g_tenant, g_hour"), std::string::npos);
  ASSERT_EQ(sql.params.size(), 3u);
  EXPECT_EQ(std::get<std::string>(sql.params[2]), "x' OR 1=1 --");
}

TEST(RenderUsage, WritesJsonAndCsvWithExactCost) {
  UsageQuery q;
  q.from_ms = 0;
  q.to_ms = 3'600'000;
  q.group_by = {GroupBy::kTenant, GroupBy::kHour};
  const int64_t counts[kAggregateColumns] = {3, 1, 0, 0, 300, 200, 0, 100, 30, 1'234'567};
  UsageRow row = MakeUsageRow(q, {"a,b", "0"}, counts);
  EXPECT_EQ(row.keys[1], "1970-01-01T00:00:00Z");
  std::string csv = RenderCsv(q, {row});
  EXPECT_EQ(csv,
            "tenant,hour,requests,error_requests,estimated_usage_requests,unpriced_requests,"
            "prompt_tokens,cached_tokens,cache_creation_tokens,uncached_tokens,"
            "completion_tokens,cost_nano_usd,cost_usd\r\n"
            "\"a,b\",1970-01-01T00:00:00Z,3,1,0,0,300,200,0,100,30,1234567,0.001234567\r\n");
  std::string json = RenderJson(q, {row});
  EXPECT_NE(json.find("\"tenant\":\"a,b\""), std::string::npos);
  EXPECT_NE(json.find("\"cost_nano_usd\":1234567"), std::string::npos);
  EXPECT_NE(json.find("\"group_by\":[\"tenant\",\"hour\"]"), std::string::npos);
}

}  // namespace
}  // namespace kinference::accounting
