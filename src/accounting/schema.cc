#include "accounting/schema.h"

#include <fmt/format.h>

namespace kinference::accounting {

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1,
       "usage_records",
       {"CREATE TABLE usage_records ("
        "record_id TEXT PRIMARY KEY, "
        "time_ms BIGINT NOT NULL, "
        "request_id TEXT NOT NULL, "
        "tenant TEXT NOT NULL, "
        "front TEXT NOT NULL, "
        "requested_model TEXT NOT NULL, "
        "served_model TEXT NOT NULL, "
        "provider TEXT NOT NULL, "
        "endpoint TEXT NOT NULL, "
        "prompt_tokens BIGINT NOT NULL, "
        "cached_tokens BIGINT NOT NULL, "
        "cache_creation_tokens BIGINT NOT NULL, "
        "uncached_tokens BIGINT NOT NULL, "
        "completion_tokens BIGINT NOT NULL, "
        "usage_estimated INTEGER NOT NULL, "
        "ttft_ms DOUBLE PRECISION, "
        "e2e_ms DOUBLE PRECISION NOT NULL, "
        "outcome TEXT NOT NULL, "
        "status INTEGER NOT NULL, "
        "policy_decision TEXT NOT NULL, "
        "cost_nano_usd BIGINT NOT NULL, "
        "priced INTEGER NOT NULL, "
        "gateway TEXT NOT NULL)"}},
      {2,
       "indexes for time-range and per-tenant queries",
       {"CREATE INDEX usage_records_time ON usage_records (time_ms)",
        "CREATE INDEX usage_records_tenant_time ON usage_records (tenant, time_ms)"}},
  };
  return kMigrations;
}

int LatestSchemaVersion() { return Migrations().back().version; }

const std::vector<std::string>& UsageColumns() {
  static const std::vector<std::string> kColumns = {"record_id",       "time_ms",
                                                    "request_id",      "tenant",
                                                    "front",           "requested_model",
                                                    "served_model",    "provider",
                                                    "endpoint",        "prompt_tokens",
                                                    "cached_tokens",   "cache_creation_tokens",
                                                    "uncached_tokens", "completion_tokens",
                                                    "usage_estimated", "ttft_ms",
                                                    "e2e_ms",          "outcome",
                                                    "status",          "policy_decision",
                                                    "cost_nano_usd",   "priced",
                                                    "gateway"};
  return kColumns;
}

std::vector<SqlValue> RecordRow(const UsageRecord& r) {
  return {r.record_id,
          r.time_ms,
          r.request_id,
          r.tenant,
          r.front,
          r.requested_model,
          r.served_model,
          r.provider,
          r.endpoint,
          r.tokens.prompt,
          r.tokens.cached,
          r.tokens.cache_creation,
          r.tokens.uncached_input(),
          r.tokens.completion,
          static_cast<int64_t>(r.usage_estimated ? 1 : 0),
          r.ttft_ms >= 0 ? SqlValue(r.ttft_ms) : SqlValue(std::monostate{}),
          r.e2e_ms,
          r.outcome,
          static_cast<int64_t>(r.status),
          r.policy_decision,
          r.cost_nano_usd,
          static_cast<int64_t>(r.priced ? 1 : 0),
          r.gateway};
}

namespace {

bool ToInt(const std::optional<std::string>& s, int64_t& out) {
  if (!s || s->empty()) return false;
  try {
    size_t pos = 0;
    out = std::stoll(*s, &pos);
    return pos == s->size();
  } catch (...) {
    return false;
  }
}

bool ToDouble(const std::optional<std::string>& s, double& out) {
  if (!s || s->empty()) return false;
  try {
    size_t pos = 0;
    out = std::stod(*s, &pos);
    return pos == s->size();
  } catch (...) {
    return false;
  }
}

}  // namespace

Result<UsageRecord> RecordFromText(const std::vector<std::optional<std::string>>& c) {
  if (c.size() != UsageColumns().size()) return InvalidArgument("usage record: column count");
  for (size_t i : {0, 2, 3, 4, 5, 6, 7, 8, 17, 19, 22})
    if (!c[i]) return InvalidArgument("usage record: NULL text column");
  UsageRecord r;
  r.record_id = *c[0];
  r.request_id = *c[2];
  r.tenant = *c[3];
  r.front = *c[4];
  r.requested_model = *c[5];
  r.served_model = *c[6];
  r.provider = *c[7];
  r.endpoint = *c[8];
  r.outcome = *c[17];
  r.policy_decision = *c[19];
  r.gateway = *c[22];
  int64_t estimated = 0, status = 0, priced = 0, uncached = 0;
  bool ok = ToInt(c[1], r.time_ms) && ToInt(c[9], r.tokens.prompt) &&
            ToInt(c[10], r.tokens.cached) && ToInt(c[11], r.tokens.cache_creation) &&
            ToInt(c[12], uncached) && ToInt(c[13], r.tokens.completion) &&
            ToInt(c[14], estimated) && ToDouble(c[16], r.e2e_ms) && ToInt(c[18], status) &&
            ToInt(c[20], r.cost_nano_usd) && ToInt(c[21], priced);
  if (!ok) return InvalidArgument("usage record: malformed numeric column");
  r.ttft_ms = -1;
  if (c[15] && !ToDouble(c[15], r.ttft_ms)) return InvalidArgument("usage record: ttft_ms");
  r.usage_estimated = estimated != 0;
  r.status = static_cast<int>(status);
  r.priced = priced != 0;
  return r;
}

std::string InsertSql(size_t rows) {
  const auto& cols = UsageColumns();
  std::string sql = "INSERT INTO usage_records (";
  for (size_t i = 0; i < cols.size(); ++i) sql += (i ? ", " : "") + cols[i];
  sql += ") VALUES ";
  size_t n = 1;
  for (size_t r = 0; r < rows; ++r) {
    sql += r ? ", (" : "(";
    for (size_t i = 0; i < cols.size(); ++i) sql += fmt::format("{}${}", i ? ", " : "", n++);
    sql += ")";
  }
  sql += " ON CONFLICT (record_id) DO NOTHING";
  return sql;
}

std::string SelectRecordsSql(bool with_tenant) {
  const auto& cols = UsageColumns();
  std::string sql = "SELECT ";
  for (size_t i = 0; i < cols.size(); ++i) sql += (i ? ", " : "") + cols[i];
  sql += " FROM usage_records WHERE time_ms >= $1 AND time_ms < $2";
  if (with_tenant) sql += " AND tenant = $4";
  sql += " ORDER BY time_ms, record_id LIMIT $3";
  return sql;
}

}  // namespace kinference::accounting
