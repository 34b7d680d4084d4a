#include "ledger/writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ledger_test_util.h"

namespace kinference::ledger {
namespace {

using testutil::Record;

// A real SQLite store that can be switched off, as a store that cannot be reached.
class SwitchableStore final : public LedgerStore {
 public:
  SwitchableStore(std::string path, std::shared_ptr<std::atomic<bool>> up)
      : inner_(MakeSqliteStore(std::move(path), false)), up_(std::move(up)) {}
  Status Open() override { return *up_ ? inner_->Open() : Down(); }
  Status Write(const std::vector<accounting::UsageRecord>& r) override {
    return *up_ ? inner_->Write(r) : Down();
  }
  Result<std::vector<accounting::UsageRow>> Query(const accounting::UsageQuery& q) override {
    return inner_->Query(q);
  }
  Result<std::vector<accounting::UsageRecord>> Records(int64_t a, int64_t b, const std::string& t,
                                                       int64_t l) override {
    return inner_->Records(a, b, t, l);
  }
  Result<int64_t> DeleteBefore(int64_t t) override { return inner_->DeleteBefore(t); }
  Result<int> SchemaVersion() override { return inner_->SchemaVersion(); }
  std::string Describe() const override { return "switchable"; }

 private:
  static Status Down() { return Status(ErrorCode::kUnavailable, "switched off"); }
  std::unique_ptr<LedgerStore> inner_;
  std::shared_ptr<std::atomic<bool>> up_;
};

size_t Count(const std::string& db) {
  auto store = MakeSqliteStore(db, false);
  EXPECT_TRUE(store->Open().ok());
  auto r = store->Records(0, INT64_MAX, "", 1'000'000);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->size() : 0;
}

WriterOptions Fast() {
  return {.queue_capacity = 100000, .batch_size = 64, .flush_interval_ms = 20};
}

TEST(LedgerWriter, WritesEverySubmittedRecordInBatches) {
  testutil::TempDir dir;
  LedgerWriter w(MakeSqliteStore(dir / "l.db", false), dir / "spool", 1 << 20, Fast());
  ASSERT_TRUE(w.Start().ok());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(w.Submit(Record(i)));
  w.Flush();
  WriterStats s = w.stats();
  EXPECT_EQ(s.submitted, 1000u);
  EXPECT_EQ(s.written, 1000u);
  EXPECT_EQ(s.spooled, 0u);
  EXPECT_TRUE(s.store_up);
  w.Stop();
  EXPECT_EQ(Count(dir / "l.db"), 1000u);
}

TEST(LedgerWriter, SpoolsWhileTheStoreIsDownAndReplaysWhenItIsBack) {
  testutil::TempDir dir;
  auto up = std::make_shared<std::atomic<bool>>(true);
  LedgerWriter w(std::make_unique<SwitchableStore>(dir / "l.db", up), dir / "spool", 1 << 20,
                 Fast());
  ASSERT_TRUE(w.Start().ok());
  for (int i = 0; i < 100; ++i) w.Submit(Record(i));
  w.Flush();
  *up = false;
  for (int i = 100; i < 300; ++i) w.Submit(Record(i));
  w.Flush();
  WriterStats s = w.stats();
  EXPECT_FALSE(s.store_up);
  EXPECT_EQ(s.written, 100u);
  EXPECT_EQ(s.spooled, 200u);
  EXPECT_EQ(s.spool_records, 200);
  *up = true;
  // Reconnects after its backoff (0.5 s) and replays the spool.
  for (int i = 0; i < 200 && w.stats().spool_records > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  s = w.stats();
  EXPECT_TRUE(s.store_up);
  EXPECT_EQ(s.spool_records, 0);
  EXPECT_EQ(s.replayed, 200u);
  EXPECT_EQ(s.lost_queue_full + s.lost_spool_full + s.lost_spool_error + s.lost_corrupt, 0u);
  w.Stop();
  EXPECT_EQ(Count(dir / "l.db"), 300u);
}

TEST(LedgerWriter, GracefulStopLosesNothingEvenWithTheStoreDown) {
  testutil::TempDir dir;
  auto up = std::make_shared<std::atomic<bool>>(false);
  {
    LedgerWriter w(std::make_unique<SwitchableStore>(dir / "l.db", up), dir / "spool", 1 << 20,
                   {.queue_capacity = 100000, .batch_size = 64, .flush_interval_ms = 60000});
    ASSERT_TRUE(w.Start().ok());
    for (int i = 0; i < 500; ++i) w.Submit(Record(i));
    w.Stop();  // the flush interval never came: Stop drains to the spool
    EXPECT_EQ(w.stats().spooled, 500u);
  }
  // The next run finds the spool and writes it to the store.
  *up = true;
  LedgerWriter w(std::make_unique<SwitchableStore>(dir / "l.db", up), dir / "spool", 1 << 20,
                 Fast());
  ASSERT_TRUE(w.Start().ok());
  for (int i = 0; i < 200 && w.stats().spool_records > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w.Stop();
  EXPECT_EQ(Count(dir / "l.db"), 500u);
}

TEST(LedgerWriter, CountsWhatItCannotKeep) {
  testutil::TempDir dir;
  auto up = std::make_shared<std::atomic<bool>>(false);
  const int64_t one = static_cast<int64_t>(accounting::ToJsonLine(Record(1)).size() + 1);
  // Room for 10 records in the spool, 50 in the queue; the thread never flushes before Stop.
  LedgerWriter w(std::make_unique<SwitchableStore>(dir / "l.db", up), dir / "spool", one * 10,
                 {.queue_capacity = 50, .batch_size = 1000, .flush_interval_ms = 60000});
  ASSERT_TRUE(w.Start().ok());
  int accepted = 0;
  for (int i = 0; i < 60; ++i) accepted += w.Submit(Record(i)) ? 1 : 0;
  EXPECT_EQ(accepted, 50);
  w.Stop();
  WriterStats s = w.stats();
  EXPECT_EQ(s.lost_queue_full, 10u);
  EXPECT_EQ(s.spooled, 10u);
  EXPECT_EQ(s.lost_spool_full, 40u);
  EXPECT_EQ(s.submitted, s.written + s.spooled + s.lost_queue_full + s.lost_spool_full);
}

TEST(LedgerWriter, ConcurrentSubmittersNeverBlockAndEveryRecordArrives) {
  testutil::TempDir dir;
  LedgerWriter w(MakeSqliteStore(dir / "l.db", false), dir / "spool", 1 << 20, Fast());
  ASSERT_TRUE(w.Start().ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) w.Submit(Record(t * 1000 + i));
    });
  for (auto& th : threads) th.join();
  w.Stop();
  EXPECT_EQ(Count(dir / "l.db"), 2000u);
}

}  // namespace
}  // namespace kinference::ledger

namespace kinference::ledger {
namespace {

// PostgreSQL restarted (fast shutdown, then crash-like immediate shutdown) while records
// keep arriving: every record ends up in the database once, none lost.
TEST(LedgerWriterPostgres, RestartsDuringLoadLoseNoRecord) {
  std::string error;
  auto pg = testing::PostgresServer::Start(&error);
  ASSERT_TRUE(pg) << error;
  testutil::TempDir dir;
  LedgerWriter w(MakePostgresStore(pg->conninfo() + " connect_timeout=2"), dir / "spool", 64 << 20,
                 {.queue_capacity = 100000, .batch_size = 128, .flush_interval_ms = 20});
  ASSERT_TRUE(w.Start().ok());
  std::atomic<bool> done{false};
  std::atomic<int> submitted{0};
  std::thread load([&] {
    for (int i = 0; !done; ++i) {
      w.Submit(testutil::Record(i));
      submitted++;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  pg->Stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(pg->Restart(&error)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  pg->StopImmediate();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(pg->Restart(&error)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  done = true;
  load.join();
  // Let the writer reconnect and replay what it spooled.
  for (int i = 0; i < 400 && (w.stats().spool_records > 0 || !w.stats().store_up); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w.Stop();
  WriterStats s = w.stats();
  EXPECT_GT(s.spooled, 0u) << "the outage was not noticed; the test proves nothing";
  EXPECT_EQ(s.lost_queue_full + s.lost_spool_full + s.lost_spool_error + s.lost_corrupt, 0u);
  EXPECT_EQ(s.spool_records, 0);
  auto store = MakePostgresStore(pg->conninfo());
  ASSERT_TRUE(store->Open().ok());
  auto records = store->Records(0, INT64_MAX, "", 10'000'000);
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(static_cast<int>(records->size()), submitted.load());
}

}  // namespace
}  // namespace kinference::ledger
