// Usage queries: what GET /v1/usage and `kinference usage` ask the ledger, the one SQL
// text both stores run (SQLite and PostgreSQL accept it alike), and the answer as JSON
// or CSV.
//
// Parameters (all optional):
//   from, to   RFC 3339 time, a date (midnight UTC) or Unix seconds; the range is
//              [from, to) on the request's arrival time. Defaults: to = now,
//              from = to - 24 h. from must be before to.
//   group_by   comma-separated, any of tenant, model (served model), provider,
//              endpoint, hour, day (UTC buckets, reported as RFC 3339 starts); none: one
//              total row.
//   tenant     only this tenant's records (a non-admin caller is always limited to its
//              own; see the gateway's usage route)
//   model      only this served model's records
//   format     json (default) or csv
// Each row: the group keys, then requests, error_requests (outcome error or cancelled),
// estimated_usage_requests (usage was the gateway's estimate), unpriced_requests,
// prompt_tokens, cached_tokens, cache_creation_tokens, uncached_tokens,
// completion_tokens, cost_usd (exact decimal text in CSV, a number in JSON, where
// cost_nano_usd carries the exact integer).
// At most kMaxUsageRows rows: a larger answer is refused (narrow the range or group
// by less), so a query's memory stays bounded.
//
// Errors: ParseUsageQuery returns kInvalidArgument naming the parameter.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "accounting/money.h"
#include "common/status.h"

namespace kinference::accounting {

inline constexpr size_t kMaxUsageRows = 100'000;

enum class GroupBy { kTenant, kModel, kProvider, kEndpoint, kHour, kDay };
const char* GroupByName(GroupBy g);

enum class UsageFormat { kJson, kCsv };

struct UsageQuery {
  int64_t from_ms = 0, to_ms = 0;
  std::vector<GroupBy> group_by;
  std::optional<std::string> tenant;
  std::optional<std::string> model;
  UsageFormat format = UsageFormat::kJson;
};

// `params`: decoded query parameters; `now`: Unix seconds.
Result<UsageQuery> ParseUsageQuery(const std::map<std::string, std::string>& params, double now);

// The aggregate SELECT with $1.. placeholders and their values, in order. Its columns:
// one per group_by (text; hour/day as integer ms), then the kAggregateColumns counts.
using SqlParam = std::variant<int64_t, std::string>;
struct Sql {
  std::string text;
  std::vector<SqlParam> params;
};
Sql AggregateSql(const UsageQuery& q);
inline constexpr int kAggregateColumns = 10;

struct UsageRow {
  std::vector<std::string> keys;  // per group_by; hour/day as RFC 3339
  int64_t requests = 0, error_requests = 0, estimated_usage_requests = 0, unpriced_requests = 0;
  int64_t prompt_tokens = 0, cached_tokens = 0, cache_creation_tokens = 0, uncached_tokens = 0,
          completion_tokens = 0;
  NanoUsd cost_nano_usd = 0;
};

// Builds a row from one result row's columns as read from a store: group keys as text
// (hour/day as decimal ms, turned into RFC 3339 here), then the counts.
UsageRow MakeUsageRow(const UsageQuery& q, std::vector<std::string> keys,
                      const int64_t (&counts)[kAggregateColumns]);

std::string RenderJson(const UsageQuery& q, const std::vector<UsageRow>& rows);
std::string RenderCsv(const UsageQuery& q, const std::vector<UsageRow>& rows);

}  // namespace kinference::accounting
