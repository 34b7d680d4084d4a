// SQLite ledger store: WAL journal (readers never block the writer), synchronous NORMAL
// by default (in WAL mode a committed transaction survives a process crash; FULL also
// survives power loss: sqlite.org/pragma.html#pragma_synchronous), a 5 s busy timeout.
#include <sqlite3.h>

#include <chrono>
#include <filesystem>

#include "accounting/schema.h"
#include "ledger/store.h"

namespace kinference::ledger {
namespace {

using accounting::SqlValue;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK && s_; }
  sqlite3_stmt* get() { return s_; }
  // Binds $name (e.g. "$1").
  void Bind(const std::string& name, const SqlValue& v) {
    Bind(sqlite3_bind_parameter_index(s_, name.c_str()), v);
  }
  void Bind(int idx, const SqlValue& v) {
    if (idx <= 0) return;
    if (const auto* i = std::get_if<int64_t>(&v)) {
      sqlite3_bind_int64(s_, idx, *i);
    } else if (const auto* d = std::get_if<double>(&v)) {
      sqlite3_bind_double(s_, idx, *d);
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      sqlite3_bind_text(s_, idx, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_null(s_, idx);
    }
  }
  std::optional<std::string> Text(int col) {
    if (sqlite3_column_type(s_, col) == SQLITE_NULL) return std::nullopt;
    const unsigned char* t = sqlite3_column_text(s_, col);
    return std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(s_, col));
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

class SqliteStore final : public LedgerStore {
 public:
  SqliteStore(std::string path, bool full) : path_(std::move(path)), full_(full) {}
  ~SqliteStore() override { Close(); }

  Status Open() override {
    Close();
    std::error_code ec;
    auto dir = std::filesystem::path(path_).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (sqlite3_open_v2(path_.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      Status s = Error("open");
      Close();
      return s;
    }
    sqlite3_busy_timeout(db_, 5000);
    for (const char* pragma : {"PRAGMA journal_mode=WAL",
                               full_ ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"}) {
      Status s = Exec(pragma);
      if (!s.ok()) {
        Close();
        return s;
      }
    }
    Status s = Migrate();
    if (!s.ok()) Close();
    return s;
  }

  Status Write(const std::vector<accounting::UsageRecord>& records) override {
    if (!db_) return Status(ErrorCode::kUnavailable, "sqlite ledger not open");
    if (records.empty()) return Status::Ok();
    if (!insert_) {
      insert_ = std::make_unique<Stmt>(db_, accounting::InsertSql(1));
      if (!insert_->ok()) {
        insert_.reset();
        return Error("prepare insert");
      }
    }
    Status s = Exec("BEGIN IMMEDIATE");
    if (!s.ok()) return s;
    for (const auto& r : records) {
      sqlite3_stmt* st = insert_->get();
      sqlite3_reset(st);
      sqlite3_clear_bindings(st);
      std::vector<SqlValue> row = accounting::RecordRow(r);
      for (size_t i = 0; i < row.size(); ++i) insert_->Bind(static_cast<int>(i + 1), row[i]);
      if (sqlite3_step(st) != SQLITE_DONE) {
        Status err = Error("insert");
        sqlite3_reset(st);
        Exec("ROLLBACK");
        return err;
      }
    }
    sqlite3_reset(insert_->get());
    s = Exec("COMMIT");
    if (!s.ok()) Exec("ROLLBACK");
    return s;
  }

  Result<std::vector<accounting::UsageRow>> Query(const accounting::UsageQuery& q) override {
    if (!db_) return Status(ErrorCode::kUnavailable, "sqlite ledger not open");
    accounting::Sql sql = accounting::AggregateSql(q);
    Stmt st(db_, sql.text);
    if (!st.ok()) return Error("prepare query");
    for (size_t i = 0; i < sql.params.size(); ++i)
      st.Bind("$" + std::to_string(i + 1),
              std::visit([](const auto& v) { return SqlValue(v); }, sql.params[i]));
    std::vector<accounting::UsageRow> rows;
    const int keys = static_cast<int>(q.group_by.size());
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      std::vector<std::string> k;
      for (int i = 0; i < keys; ++i) k.push_back(st.Text(i).value_or(""));
      int64_t counts[accounting::kAggregateColumns];
      for (int i = 0; i < accounting::kAggregateColumns; ++i)
        counts[i] = sqlite3_column_int64(st.get(), keys + i);
      rows.push_back(accounting::MakeUsageRow(q, std::move(k), counts));
    }
    if (rc != SQLITE_DONE) return Error("query");
    return rows;
  }

  Result<std::vector<accounting::UsageRecord>> Records(int64_t from_ms, int64_t to_ms,
                                                       const std::string& tenant,
                                                       int64_t limit) override {
    if (!db_) return Status(ErrorCode::kUnavailable, "sqlite ledger not open");
    Stmt st(db_, accounting::SelectRecordsSql(!tenant.empty()));
    if (!st.ok()) return Error("prepare records");
    st.Bind("$1", from_ms);
    st.Bind("$2", to_ms);
    st.Bind("$3", limit);
    if (!tenant.empty()) st.Bind("$4", tenant);
    std::vector<accounting::UsageRecord> out;
    const int n = static_cast<int>(accounting::UsageColumns().size());
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      std::vector<std::optional<std::string>> cols;
      for (int i = 0; i < n; ++i) cols.push_back(st.Text(i));
      auto r = accounting::RecordFromText(cols);
      if (!r.ok()) return Status(ErrorCode::kInternal, r.status().message());
      out.push_back(std::move(*r));
    }
    if (rc != SQLITE_DONE) return Error("records");
    return out;
  }

  Result<int64_t> DeleteBefore(int64_t time_ms) override {
    if (!db_) return Status(ErrorCode::kUnavailable, "sqlite ledger not open");
    Stmt st(db_, "DELETE FROM usage_records WHERE time_ms < $1");
    if (!st.ok()) return Error("prepare delete");
    st.Bind("$1", time_ms);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return Error("delete");
    return static_cast<int64_t>(sqlite3_changes(db_));
  }

  Result<int> SchemaVersion() override {
    if (!db_) return Status(ErrorCode::kUnavailable, "sqlite ledger not open");
    Status s = Exec(accounting::kCreateMigrationsTable);
    if (!s.ok()) return s;
    Stmt st(db_, "SELECT COALESCE(MAX(version), 0) FROM kinference_schema_migrations");
    if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return Error("schema version");
    return static_cast<int>(sqlite3_column_int64(st.get(), 0));
  }

  std::string Describe() const override { return "sqlite:" + path_; }

 private:
  void Close() {
    insert_.reset();
    if (db_) sqlite3_close_v2(db_);
    db_ = nullptr;
  }

  Status Error(const std::string& what) {
    int code = db_ ? sqlite3_errcode(db_) : SQLITE_CANTOPEN;
    std::string msg =
        "sqlite ledger " + path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "cannot open");
    const int primary = code & 0xff;
    bool unavailable = primary == SQLITE_BUSY || primary == SQLITE_LOCKED ||
                       primary == SQLITE_FULL || primary == SQLITE_IOERR ||
                       primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY;
    return Status(unavailable ? ErrorCode::kUnavailable : ErrorCode::kInternal, msg);
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      sqlite3_free(err);
      return Error(sql);
    }
    return Status::Ok();
  }

  Status Migrate() {
    // BEGIN IMMEDIATE takes the write lock: a second process migrating the same file
    // waits, then sees the new version.
    auto version = SchemaVersion();
    if (!version.ok()) return version.status();
    if (*version > accounting::LatestSchemaVersion())
      return Status(ErrorCode::kInternal, "sqlite ledger " + path_ + ": schema version " +
                                              std::to_string(*version) +
                                              " is newer than this program's " +
                                              std::to_string(accounting::LatestSchemaVersion()));
    for (const auto& m : accounting::Migrations()) {
      Status s = Exec("BEGIN IMMEDIATE");
      if (!s.ok()) return s;
      Stmt check(db_, "SELECT COUNT(*) FROM kinference_schema_migrations WHERE version = $1");
      check.Bind("$1", static_cast<int64_t>(m.version));
      if (!check.ok() || sqlite3_step(check.get()) != SQLITE_ROW) {
        Exec("ROLLBACK");
        return Error("migration check");
      }
      const bool applied = sqlite3_column_int64(check.get(), 0) > 0;
      sqlite3_reset(check.get());
      if (applied) {
        Exec("COMMIT");
        continue;
      }
      for (const auto& stmt : m.statements) {
        s = Exec(stmt.c_str());
        if (!s.ok()) {
          Exec("ROLLBACK");
          return s;
        }
      }
      Stmt mark(db_,
                "INSERT INTO kinference_schema_migrations (version, description, applied_at_ms) "
                "VALUES ($1, $2, $3)");
      mark.Bind("$1", static_cast<int64_t>(m.version));
      mark.Bind("$2", std::string(m.description));
      mark.Bind("$3", NowMs());
      if (!mark.ok() || sqlite3_step(mark.get()) != SQLITE_DONE) {
        Status err = Error("migration mark");
        Exec("ROLLBACK");
        return err;
      }
      s = Exec("COMMIT");
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  std::string path_;
  bool full_;
  sqlite3* db_ = nullptr;
  std::unique_ptr<Stmt> insert_;
};

}  // namespace

std::unique_ptr<LedgerStore> MakeSqliteStore(std::string path, bool synchronous_full) {
  return std::make_unique<SqliteStore>(std::move(path), synchronous_full);
}

std::unique_ptr<LedgerStore> MakeStore(const accounting::LedgerConfig& c) {
  switch (c.store) {
    case accounting::StoreKind::kSqlite:
      return MakeSqliteStore(c.sqlite_path, c.sqlite_synchronous_full);
    case accounting::StoreKind::kPostgres:
      return MakePostgresStore(c.postgres);
    case accounting::StoreKind::kNone:
      return nullptr;
  }
  return nullptr;
}

}  // namespace kinference::ledger
