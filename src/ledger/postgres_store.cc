// PostgreSQL ledger store (libpq): one ledger shared by several gateway replicas.
// Connections get connect_timeout=5 s, TCP keepalives and application_name=kinference
// unless the conninfo sets them. Migrations run under a transaction-scoped advisory lock
// (pg_advisory_xact_lock), so replicas starting together migrate once. Batches are one
// multi-row INSERT ... ON CONFLICT (record_id) DO NOTHING per at most kRowsPerInsert
// records, all in one transaction.
#include <libpq-fe.h>

#include <chrono>
#include <memory>

#include "accounting/schema.h"
#include "ledger/store.h"

namespace kinference::ledger {
namespace {

using accounting::SqlValue;

// 23 columns * 2000 rows = 46,000 parameters, below PostgreSQL's 65,535 per statement.
constexpr size_t kRowsPerInsert = 2000;
// Advisory lock key for migrations ("kinf" as an integer).
constexpr const char* kMigrationLockKey = "1802071654";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Text(const SqlValue& v, bool& is_null) {
  is_null = false;
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", *d);
    return buf;
  }
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  is_null = true;
  return "";
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

class PostgresStore final : public LedgerStore {
 public:
  explicit PostgresStore(std::string conninfo) : conninfo_(std::move(conninfo)) {}
  ~PostgresStore() override {
    if (conn_) PQfinish(conn_);
  }

  Status Open() override {
    if (conn_) PQfinish(conn_);
    // Defaults first; the expanded conninfo (dbname, expand_dbname=1) overrides them.
    const char* keys[] = {
        "connect_timeout",  "keepalives",       "keepalives_idle", "keepalives_interval",
        "keepalives_count", "application_name", "dbname",          nullptr};
    const char* vals[] = {"5", "1", "10", "5", "3", "kinference", conninfo_.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, vals, 1);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) return Error("connect", nullptr);
    PgResult quiet(PQexec(conn_, "SET client_min_messages TO warning"));
    return Migrate();
  }

  Status Write(const std::vector<accounting::UsageRecord>& records) override {
    if (records.empty()) return Status::Ok();
    if (!Connected()) return Status(ErrorCode::kUnavailable, "postgres ledger: not connected");
    Status s = Exec("BEGIN");
    if (!s.ok()) return s;
    for (size_t start = 0; start < records.size(); start += kRowsPerInsert) {
      size_t n = std::min(kRowsPerInsert, records.size() - start);
      std::vector<std::string> values;
      std::vector<char> nulls;
      for (size_t i = start; i < start + n; ++i)
        for (const auto& v : accounting::RecordRow(records[i])) {
          bool is_null;
          values.push_back(Text(v, is_null));
          nulls.push_back(is_null);
        }
      std::vector<const char*> ptrs;
      for (size_t i = 0; i < values.size(); ++i)
        ptrs.push_back(nulls[i] ? nullptr : values[i].c_str());
      PgResult r(PQexecParams(conn_, accounting::InsertSql(n).c_str(),
                              static_cast<int>(ptrs.size()), nullptr, ptrs.data(), nullptr, nullptr,
                              0));
      if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
        Status err = Error("insert", r.get());
        PgResult rb(PQexec(conn_, "ROLLBACK"));
        return err;
      }
    }
    return Exec("COMMIT");
  }

  Result<std::vector<accounting::UsageRow>> Query(const accounting::UsageQuery& q) override {
    if (!Connected()) return Status(ErrorCode::kUnavailable, "postgres ledger: not connected");
    accounting::Sql sql = accounting::AggregateSql(q);
    std::vector<std::string> values;
    for (const auto& p : sql.params)
      values.push_back(std::visit(
          [](const auto& v) -> std::string {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
              return v;
            } else {
              return std::to_string(v);
            }
          },
          p));
    PgResult r = Run(sql.text, values);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error("query", r.get());
    std::vector<accounting::UsageRow> rows;
    const int keys = static_cast<int>(q.group_by.size());
    for (int row = 0; row < PQntuples(r.get()); ++row) {
      std::vector<std::string> k;
      for (int i = 0; i < keys; ++i) k.emplace_back(PQgetvalue(r.get(), row, i));
      int64_t counts[accounting::kAggregateColumns];
      for (int i = 0; i < accounting::kAggregateColumns; ++i)
        counts[i] = std::strtoll(PQgetvalue(r.get(), row, keys + i), nullptr, 10);
      rows.push_back(accounting::MakeUsageRow(q, std::move(k), counts));
    }
    return rows;
  }

  Result<std::vector<accounting::UsageRecord>> Records(int64_t from_ms, int64_t to_ms,
                                                       const std::string& tenant,
                                                       int64_t limit) override {
    if (!Connected()) return Status(ErrorCode::kUnavailable, "postgres ledger: not connected");
    std::vector<std::string> values = {std::to_string(from_ms), std::to_string(to_ms),
                                       std::to_string(limit)};
    if (!tenant.empty()) values.push_back(tenant);
    PgResult r = Run(accounting::SelectRecordsSql(!tenant.empty()), values);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error("records", r.get());
    std::vector<accounting::UsageRecord> out;
    const int n = static_cast<int>(accounting::UsageColumns().size());
    for (int row = 0; row < PQntuples(r.get()); ++row) {
      std::vector<std::optional<std::string>> cols;
      for (int i = 0; i < n; ++i)
        cols.push_back(PQgetisnull(r.get(), row, i)
                           ? std::nullopt
                           : std::optional<std::string>(PQgetvalue(r.get(), row, i)));
      auto rec = accounting::RecordFromText(cols);
      if (!rec.ok()) return Status(ErrorCode::kInternal, rec.status().message());
      out.push_back(std::move(*rec));
    }
    return out;
  }

  Result<int64_t> DeleteBefore(int64_t time_ms) override {
    if (!Connected()) return Status(ErrorCode::kUnavailable, "postgres ledger: not connected");
    PgResult r = Run("DELETE FROM usage_records WHERE time_ms < $1", {std::to_string(time_ms)});
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return Error("delete", r.get());
    return static_cast<int64_t>(std::strtoll(PQcmdTuples(r.get()), nullptr, 10));
  }

  Result<int> SchemaVersion() override {
    if (!Connected()) return Status(ErrorCode::kUnavailable, "postgres ledger: not connected");
    // Under the migration lock: replicas starting together would otherwise race on
    // CREATE TABLE IF NOT EXISTS (a unique violation in pg_type).
    Status s = Exec("BEGIN");
    if (!s.ok()) return s;
    s = Exec(std::string("SELECT pg_advisory_xact_lock(") + kMigrationLockKey + ")");
    if (s.ok()) s = Exec(accounting::kCreateMigrationsTable);
    if (s.ok()) s = Exec("COMMIT");
    if (!s.ok()) {
      PgResult rb(PQexec(conn_, "ROLLBACK"));
      return s;
    }
    PgResult r(PQexec(conn_, "SELECT COALESCE(MAX(version), 0) FROM kinference_schema_migrations"));
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error("schema version", r.get());
    return static_cast<int>(std::strtol(PQgetvalue(r.get(), 0, 0), nullptr, 10));
  }

  std::string Describe() const override { return "postgres"; }

 private:
  bool Connected() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

  PgResult Run(const std::string& sql, const std::vector<std::string>& values) {
    std::vector<const char*> ptrs;
    for (const auto& v : values) ptrs.push_back(v.c_str());
    return PgResult(PQexecParams(conn_, sql.c_str(), static_cast<int>(ptrs.size()), nullptr,
                                 ptrs.data(), nullptr, nullptr, 0));
  }

  // A lost connection, a server shutting down or a connection-class SQLSTATE (08...,
  // 57P..) is kUnavailable; anything else kInternal.
  Status Error(const std::string& what, const PGresult* r) {
    std::string msg =
        r ? PQresultErrorMessage(r) : (conn_ ? PQerrorMessage(conn_) : "out of memory");
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    std::string sqlstate = state ? state : "";
    bool unavailable = !Connected() || sqlstate.starts_with("08") || sqlstate.starts_with("57P") ||
                       sqlstate == "53300" || sqlstate.empty();
    return Status(unavailable ? ErrorCode::kUnavailable : ErrorCode::kInternal,
                  "postgres ledger: " + what + ": " + msg);
  }

  Status Exec(const std::string& sql) {
    PgResult r(PQexec(conn_, sql.c_str()));
    ExecStatusType st = PQresultStatus(r.get());
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return Error(sql, r.get());
    return Status::Ok();
  }

  Status Migrate() {
    auto version = SchemaVersion();
    if (!version.ok()) return version.status();
    if (*version > accounting::LatestSchemaVersion())
      return Status(ErrorCode::kInternal, "postgres ledger: schema version " +
                                              std::to_string(*version) +
                                              " is newer than this program's " +
                                              std::to_string(accounting::LatestSchemaVersion()));
    for (const auto& m : accounting::Migrations()) {
      Status s = Exec("BEGIN");
      if (!s.ok()) return s;
      s = Exec(std::string("SELECT pg_advisory_xact_lock(") + kMigrationLockKey + ")");
      if (!s.ok()) {
        Exec("ROLLBACK");
        return s;
      }
      PgResult applied = Run("SELECT COUNT(*) FROM kinference_schema_migrations WHERE version = $1",
                             {std::to_string(m.version)});
      if (PQresultStatus(applied.get()) != PGRES_TUPLES_OK) {
        Status err = Error("migration check", applied.get());
        Exec("ROLLBACK");
        return err;
      }
      if (std::strtol(PQgetvalue(applied.get(), 0, 0), nullptr, 10) > 0) {
        Exec("COMMIT");
        continue;
      }
      for (const auto& stmt : m.statements) {
        s = Exec(stmt);
        if (!s.ok()) {
          Exec("ROLLBACK");
          return s;
        }
      }
      PgResult mark =
          Run("INSERT INTO kinference_schema_migrations (version, description, applied_at_ms) "
              "VALUES ($1, $2, $3)",
              {std::to_string(m.version), m.description, std::to_string(NowMs())});
      if (PQresultStatus(mark.get()) != PGRES_COMMAND_OK) {
        Status err = Error("migration mark", mark.get());
        Exec("ROLLBACK");
        return err;
      }
      s = Exec("COMMIT");
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  std::string conninfo_;
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<LedgerStore> MakePostgresStore(std::string conninfo) {
  return std::make_unique<PostgresStore>(std::move(conninfo));
}

}  // namespace kinference::ledger
