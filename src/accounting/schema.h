// The ledger's SQL schema and its migrations, one text for SQLite and PostgreSQL alike
// (both accept these types and statements). The stores apply every migration above the
// database's version in order, each in its own transaction, recording it in
// kinference_schema_migrations; a database newer than this program is refused rather
// than written with an older layout.
//
// Thread-safety: constant data.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "accounting/usage_record.h"
#include "common/status.h"

namespace kinference::accounting {

struct Migration {
  int version;
  const char* description;
  std::vector<std::string> statements;
};

// In version order, starting at 1.
const std::vector<Migration>& Migrations();
int LatestSchemaVersion();

inline constexpr const char* kCreateMigrationsTable =
    "CREATE TABLE IF NOT EXISTS kinference_schema_migrations ("
    "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)";

// Columns of usage_records in insertion order (InsertSql's placeholders follow it).
const std::vector<std::string>& UsageColumns();
// INSERT of `rows` records ($1.. placeholders, row after row), skipping a record_id
// already present.
std::string InsertSql(size_t rows);
// One record as column values in UsageColumns order (NULL: monostate).
using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;
std::vector<SqlValue> RecordRow(const UsageRecord& r);
// A record from its columns read back as text (nullopt: NULL). kInvalidArgument when a
// column is missing or malformed.
Result<UsageRecord> RecordFromText(const std::vector<std::optional<std::string>>& cols);

// SELECT of every column for records in [$1, $2), oldest first, at most $3.
std::string SelectRecordsSql(bool with_tenant);

}  // namespace kinference::accounting
