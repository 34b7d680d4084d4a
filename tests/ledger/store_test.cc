// The same behaviours for both ledger stores: SQLite (a file in a temporary directory)
// and PostgreSQL (a real server started by the test; each test gets a fresh database).
#include "ledger/store.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "accounting/calendar.h"
#include "accounting/schema.h"
#include "ledger_test_util.h"

namespace kinference::ledger {
namespace {

using accounting::GroupBy;
using accounting::UsageQuery;
using testutil::Record;

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      path_ = dir_ / "ledger.db";
      store_ = MakeSqliteStore(path_, false);
    } else {
      auto* pg = testutil::SharedPostgres();
      ASSERT_NE(pg, nullptr);
      const std::string db = "t" + std::to_string(counter_++);
      PGconn* c = PQconnectdb(pg->conninfo().c_str());
      ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
      PQclear(PQexec(c, ("DROP DATABASE IF EXISTS " + db).c_str()));
      PGresult* r = PQexec(c, ("CREATE DATABASE " + db).c_str());
      ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(c);
      PQclear(r);
      PQfinish(c);
      conninfo_ = pg->conninfo();
      conninfo_.replace(conninfo_.find("dbname=postgres"), 15, "dbname=" + db);
      store_ = MakePostgresStore(conninfo_);
    }
  }
  std::unique_ptr<LedgerStore> Reopened() {
    return GetParam() == "sqlite" ? MakeSqliteStore(path_, false) : MakePostgresStore(conninfo_);
  }

  static inline int counter_ = 0;
  testutil::TempDir dir_;
  std::string path_, conninfo_;
  std::unique_ptr<LedgerStore> store_;
};

TEST_P(StoreTest, OpenCreatesTheLatestSchema) {
  ASSERT_TRUE(store_->Open().ok());
  EXPECT_EQ(*store_->SchemaVersion(), accounting::LatestSchemaVersion());
  // Opening again (a restart, a second replica) changes nothing.
  auto again = Reopened();
  ASSERT_TRUE(again->Open().ok());
  EXPECT_EQ(*again->SchemaVersion(), accounting::LatestSchemaVersion());
}

TEST_P(StoreTest, WritesAreIdempotentByRecordId) {
  ASSERT_TRUE(store_->Open().ok());
  std::vector<accounting::UsageRecord> batch = {Record(1), Record(2), Record(3)};
  ASSERT_TRUE(store_->Write(batch).ok());
  // The same batch again (an acknowledgement lost), plus one new record.
  batch.push_back(Record(4));
  ASSERT_TRUE(store_->Write(batch).ok());
  auto records = store_->Records(0, INT64_MAX, "", 100);
  ASSERT_TRUE(records.ok()) << records.status().message();
  ASSERT_EQ(records->size(), 4u);
  EXPECT_EQ((*records)[0], Record(1));  // every field round-trips
}

TEST_P(StoreTest, RecordsWithoutTtftKeepTheirMissingValue) {
  ASSERT_TRUE(store_->Open().ok());
  auto r = Record(7);
  r.ttft_ms = -1;
  r.outcome = "error";
  ASSERT_TRUE(store_->Write({r}).ok());
  auto back = store_->Records(0, INT64_MAX, "acme", 10);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0], r);
}

TEST_P(StoreTest, AggregatesByGroupWithinTheRange) {
  ASSERT_TRUE(store_->Open().ok());
  const int64_t t0 = static_cast<int64_t>(*accounting::ParseTime("2025-03-10T10:00:00Z")) * 1000;
  auto a = Record(1, "acme", t0 + 1000);
  auto b = Record(2, "acme", t0 + 3'600'000 + 5);  // the next hour
  auto c = Record(3, "zeta", t0 + 2000);
  c.served_model = "qwen";
  c.outcome = "cancelled";
  auto late = Record(4, "acme", t0 + 86'400'000);  // outside the range
  ASSERT_TRUE(store_->Write({a, b, c, late}).ok());

  UsageQuery q;
  q.from_ms = t0;
  q.to_ms = t0 + 86'400'000;
  q.group_by = {GroupBy::kTenant, GroupBy::kHour};
  auto rows = store_->Query(q);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].keys, (std::vector<std::string>{"acme", "2025-03-10T10:00:00Z"}));
  EXPECT_EQ((*rows)[1].keys, (std::vector<std::string>{"acme", "2025-03-10T11:00:00Z"}));
  EXPECT_EQ((*rows)[2].keys, (std::vector<std::string>{"zeta", "2025-03-10T10:00:00Z"}));
  EXPECT_EQ((*rows)[2].error_requests, 1);

  q.group_by = {};
  rows = store_->Query(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  const auto& total = (*rows)[0];
  EXPECT_EQ(total.requests, 3);
  EXPECT_EQ(total.prompt_tokens, 300);
  EXPECT_EQ(total.cached_tokens, 180);
  EXPECT_EQ(total.uncached_tokens, 120);
  EXPECT_EQ(total.completion_tokens, 30);
  EXPECT_EQ(total.cost_nano_usd, 1001 + 1002 + 1003);

  q.tenant = "acme";
  q.group_by = {GroupBy::kModel, GroupBy::kDay};
  rows = store_->Query(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].keys, (std::vector<std::string>{"llama", "2025-03-10T00:00:00Z"}));
  EXPECT_EQ((*rows)[0].requests, 2);
}

TEST_P(StoreTest, RetentionDeletesOnlyOlderRecords) {
  ASSERT_TRUE(store_->Open().ok());
  ASSERT_TRUE(
      store_->Write({Record(1, "a", 1000), Record(2, "a", 2000), Record(3, "a", 3000)}).ok());
  auto n = store_->DeleteBefore(2000);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(store_->Records(0, INT64_MAX, "", 10)->size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

TEST(SqliteStore, MigratesAVersionOneDatabaseKeepingItsRows) {
  testutil::TempDir dir;
  const std::string path = dir / "old.db";
  {
    // What a version-1 program left: the table and its migration mark, no indexes.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, accounting::kCreateMigrationsTable, nullptr, nullptr, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, accounting::Migrations()[0].statements[0].c_str(), nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(
            db,
            "INSERT INTO kinference_schema_migrations VALUES (1, 'usage_records', 0);"
            "INSERT INTO usage_records VALUES ('id1', 5, 'r', 'acme', 'openai', 'm', 'm', 'p', "
            "'p/0', 10, 4, 0, 6, 2, 0, NULL, 1.5, 'success', 200, '', 77, 1, 'g')",
            nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = MakeSqliteStore(path, false);
  ASSERT_TRUE(store->Open().ok());
  EXPECT_EQ(*store->SchemaVersion(), accounting::LatestSchemaVersion());
  auto records = store->Records(0, 10, "", 10);
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].cost_nano_usd, 77);
  // The version-2 indexes exist now.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(
      db, "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name LIKE 'usage_records_%'",
      -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 2);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(SqliteStore, RefusesADatabaseFromANewerProgram) {
  testutil::TempDir dir;
  const std::string path = dir / "new.db";
  {
    auto store = MakeSqliteStore(path, false);
    ASSERT_TRUE(store->Open().ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "INSERT INTO kinference_schema_migrations VALUES (99, 'future', 0)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = MakeSqliteStore(path, false);
  Status s = store->Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_NE(s.message().find("newer than this program"), std::string::npos);
}

TEST(PostgresStore, AnUnreachableServerIsUnavailable) {
  auto store = MakePostgresStore("host=127.0.0.1 port=" + std::to_string(testing::FreePort()) +
                                 " user=x dbname=x connect_timeout=2");
  Status s = store->Open();
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(store->Write({Record(1)}).code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace kinference::ledger
