#include "accounting/usage_query.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>

#include "accounting/calendar.h"

namespace kinference::accounting {
namespace json = boost::json;
namespace {

constexpr const char* kCountNames[kAggregateColumns] = {
    "requests",          "error_requests", "estimated_usage_requests", "unpriced_requests",
    "prompt_tokens",     "cached_tokens",  "cache_creation_tokens",    "uncached_tokens",
    "completion_tokens", "cost_nano_usd"};

std::string Column(GroupBy g) {
  switch (g) {
    case GroupBy::kTenant:
      return "tenant";
    case GroupBy::kModel:
      return "served_model";
    case GroupBy::kProvider:
      return "provider";
    case GroupBy::kEndpoint:
      return "endpoint";
    case GroupBy::kHour:
      return "(time_ms / 3600000) * 3600000";
    case GroupBy::kDay:
      return "(time_ms / 86400000) * 86400000";
  }
  return "";
}

bool IsTime(GroupBy g) { return g == GroupBy::kHour || g == GroupBy::kDay; }

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

const char* GroupByName(GroupBy g) {
  switch (g) {
    case GroupBy::kTenant:
      return "tenant";
    case GroupBy::kModel:
      return "model";
    case GroupBy::kProvider:
      return "provider";
    case GroupBy::kEndpoint:
      return "endpoint";
    case GroupBy::kHour:
      return "hour";
    case GroupBy::kDay:
      return "day";
  }
  return "";
}

Result<UsageQuery> ParseUsageQuery(const std::map<std::string, std::string>& params, double now) {
  UsageQuery q;
  for (const auto& [k, v] : params)
    if (k != "from" && k != "to" && k != "group_by" && k != "tenant" && k != "model" &&
        k != "format")
      return InvalidArgument(
          "unknown parameter '" + k + "' (expected from, to, group_by, tenant, model, format)", k);
  auto get = [&](const char* k) -> const std::string* {
    auto it = params.find(k);
    return it == params.end() ? nullptr : &it->second;
  };
  double to = now;
  if (const auto* v = get("to")) {
    auto t = ParseTime(*v);
    if (!t) return InvalidArgument("to: expected an RFC 3339 time, a date or Unix seconds", "to");
    to = *t;
  }
  double from = to - 86400;
  if (const auto* v = get("from")) {
    auto t = ParseTime(*v);
    if (!t)
      return InvalidArgument("from: expected an RFC 3339 time, a date or Unix seconds", "from");
    from = *t;
  }
  if (!(from < to)) return InvalidArgument("from must be before to", "from");
  q.from_ms = static_cast<int64_t>(std::floor(from * 1000));
  q.to_ms = static_cast<int64_t>(std::floor(to * 1000));
  if (const auto* v = get("group_by"); v && !v->empty()) {
    size_t start = 0;
    while (start <= v->size()) {
      size_t end = v->find(',', start);
      if (end == std::string::npos) end = v->size();
      std::string name = v->substr(start, end - start);
      std::optional<GroupBy> g;
      for (GroupBy c : {GroupBy::kTenant, GroupBy::kModel, GroupBy::kProvider, GroupBy::kEndpoint,
                        GroupBy::kHour, GroupBy::kDay})
        if (name == GroupByName(c)) g = c;
      if (!g)
        return InvalidArgument("group_by: unknown key '" + name +
                                   "' (expected tenant, model, provider, endpoint, hour, day)",
                               "group_by");
      for (GroupBy seen : q.group_by)
        if (seen == *g) return InvalidArgument("group_by: '" + name + "' given twice", "group_by");
      q.group_by.push_back(*g);
      start = end + 1;
    }
  }
  if (const auto* v = get("tenant")) {
    if (v->empty()) return InvalidArgument("tenant: empty", "tenant");
    q.tenant = *v;
  }
  if (const auto* v = get("model")) {
    if (v->empty()) return InvalidArgument("model: empty", "model");
    q.model = *v;
  }
  if (const auto* v = get("format")) {
    if (*v == "json") {
      q.format = UsageFormat::kJson;
    } else if (*v == "csv") {
      q.format = UsageFormat::kCsv;
    } else {
      return InvalidArgument("format: expected json or csv", "format");
    }
  }
  return q;
}

Sql AggregateSql(const UsageQuery& q) {
  Sql sql;
  std::string select, group;
  for (GroupBy g : q.group_by) {
    std::string col = Column(g);
    select += IsTime(g) ? col : "COALESCE(" + col + ", '')";
    select += " AS g_" + std::string(GroupByName(g)) + ", ";
    group += (group.empty() ? "" : ", ") + std::string("g_") + GroupByName(g);
  }
  sql.text = "SELECT " + select +
             "COUNT(*), "
             "CAST(COALESCE(SUM(CASE WHEN outcome <> 'success' THEN 1 ELSE 0 END), 0) AS BIGINT), "
             "CAST(COALESCE(SUM(usage_estimated), 0) AS BIGINT), "
             "CAST(COALESCE(SUM(CASE WHEN priced = 0 THEN 1 ELSE 0 END), 0) AS BIGINT), "
             "CAST(COALESCE(SUM(prompt_tokens), 0) AS BIGINT), "
             "CAST(COALESCE(SUM(cached_tokens), 0) AS BIGINT), "
             "CAST(COALESCE(SUM(cache_creation_tokens), 0) AS BIGINT), "
             "CAST(COALESCE(SUM(uncached_tokens), 0) AS BIGINT), "
             "CAST(COALESCE(SUM(completion_tokens), 0) AS BIGINT), "
             "CAST(COALESCE(SUM(cost_nano_usd), 0) AS BIGINT) "
             "FROM usage_records WHERE time_ms >= $1 AND time_ms < $2";
  sql.params = {q.from_ms, q.to_ms};
  if (q.tenant) {
    sql.params.push_back(*q.tenant);
    sql.text += fmt::format(" AND tenant = ${}", sql.params.size());
  }
  if (q.model) {
    sql.params.push_back(*q.model);
    sql.text += fmt::format(" AND served_model = ${}", sql.params.size());
  }
  if (!group.empty()) sql.text += " GROUP BY " + group + " ORDER BY " + group;
  sql.text += fmt::format(" LIMIT {}", kMaxUsageRows + 1);
  return sql;
}

UsageRow MakeUsageRow(const UsageQuery& q, std::vector<std::string> keys,
                      const int64_t (&c)[kAggregateColumns]) {
  UsageRow r;
  for (size_t i = 0; i < keys.size() && i < q.group_by.size(); ++i) {
    if (IsTime(q.group_by[i])) {
      int64_t ms = 0;
      try {
        ms = std::stoll(keys[i]);
      } catch (...) {
      }
      keys[i] = FormatRfc3339(static_cast<double>(ms) / 1000.0);
    }
  }
  r.keys = std::move(keys);
  r.requests = c[0];
  r.error_requests = c[1];
  r.estimated_usage_requests = c[2];
  r.unpriced_requests = c[3];
  r.prompt_tokens = c[4];
  r.cached_tokens = c[5];
  r.cache_creation_tokens = c[6];
  r.uncached_tokens = c[7];
  r.completion_tokens = c[8];
  r.cost_nano_usd = c[9];
  return r;
}

namespace {
int64_t CountOf(const UsageRow& r, int i) {
  const int64_t v[kAggregateColumns] = {
      r.requests,          r.error_requests, r.estimated_usage_requests, r.unpriced_requests,
      r.prompt_tokens,     r.cached_tokens,  r.cache_creation_tokens,    r.uncached_tokens,
      r.completion_tokens, r.cost_nano_usd};
  return v[i];
}
}  // namespace

std::string RenderJson(const UsageQuery& q, const std::vector<UsageRow>& rows) {
  json::array data;
  for (const auto& r : rows) {
    json::object o;
    for (size_t i = 0; i < q.group_by.size() && i < r.keys.size(); ++i)
      o[GroupByName(q.group_by[i])] = r.keys[i];
    for (int i = 0; i < kAggregateColumns; ++i) o[kCountNames[i]] = CountOf(r, i);
    o["cost_usd"] = ToUsd(r.cost_nano_usd);
    data.push_back(std::move(o));
  }
  json::array group_by;
  for (GroupBy g : q.group_by) group_by.emplace_back(GroupByName(g));
  json::object out{{"object", "list"},
                   {"from", FormatRfc3339(static_cast<double>(q.from_ms) / 1000.0, true)},
                   {"to", FormatRfc3339(static_cast<double>(q.to_ms) / 1000.0, true)},
                   {"group_by", std::move(group_by)},
                   {"data", std::move(data)}};
  if (q.tenant) out["tenant"] = *q.tenant;
  if (q.model) out["model"] = *q.model;
  return json::serialize(out);
}

std::string RenderCsv(const UsageQuery& q, const std::vector<UsageRow>& rows) {
  std::string out;
  for (GroupBy g : q.group_by) out += std::string(GroupByName(g)) + ",";
  for (int i = 0; i < kAggregateColumns; ++i) out += std::string(kCountNames[i]) + ",";
  out += "cost_usd\r\n";
  for (const auto& r : rows) {
    for (const auto& k : r.keys) out += CsvField(k) + ",";
    for (int i = 0; i < kAggregateColumns; ++i) out += std::to_string(CountOf(r, i)) + ",";
    out += FormatUsd(r.cost_nano_usd) + "\r\n";
  }
  return out;
}

}  // namespace kinference::accounting
