// LedgerWriter: takes usage records from the request path and makes them durable on its
// own thread, so a request never waits for (or fails because of) the ledger.
//
//   Submit (any thread, never blocks) -> bounded in-memory queue (queue_capacity)
//     -> writer thread: a batch every flush_interval_ms or as soon as batch_size wait
//        -> store.Write (one transaction)           store reachable
//        -> spool.Append (fdatasync'ed)             store unreachable or the write failed
//     -> while the store is down: reconnect with backoff (0.5 s doubling to 30 s); once
//        it is back, spooled segments are replayed (idempotent: record_id) between batches
//     -> retention: records older than retention_days are deleted hourly
//
// Loss accounting ("nothing accepted is silently lost"): every record submitted ends up
// written, spooled, or counted in one of the lost counters: queue_full (Submit found the
// queue full), spool_full (the store was down and the spool was at spool_max_bytes),
// spool_error (the store was down and the spool could not be written), corrupt (a
// spooled line unreadable at replay; only a crash mid-append leaves one).
// Graceful stop (Stop): every queued record is written or spooled before it returns.
// Hard kill (SIGKILL, OOM): records still in the queue are lost: at most those of the
// requests finished in the last flush_interval_ms plus the duration of one store write
// (docs/accounting.md has the measurement). Spooled records survive.
//
// Thread-safety: Submit, Flush and stats are safe from any thread; Start and Stop from
// one owner thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "accounting/usage_record.h"
#include "common/status.h"
#include "ledger/spool.h"
#include "ledger/store.h"

namespace kinference::ledger {

struct WriterOptions {
  int64_t queue_capacity = 65536;
  int64_t batch_size = 512;
  int64_t flush_interval_ms = 200;
  int64_t retention_days = 0;
};

struct WriterStats {
  uint64_t submitted = 0;
  uint64_t written = 0;   // committed to the store (replayed ones included)
  uint64_t spooled = 0;   // appended to the spool
  uint64_t replayed = 0;  // moved from the spool to the store
  uint64_t lost_queue_full = 0, lost_spool_full = 0, lost_spool_error = 0, lost_corrupt = 0;
  uint64_t write_failures = 0;  // store writes or reconnects that failed
  uint64_t deleted_by_retention = 0;
  int64_t queue_depth = 0;
  int64_t spool_records = 0, spool_bytes = 0;
  bool store_up = false;
};

class LedgerWriter {
 public:
  LedgerWriter(std::unique_ptr<LedgerStore> store, std::string spool_dir, int64_t spool_max_bytes,
               WriterOptions options);
  ~LedgerWriter();  // Stop()
  LedgerWriter(const LedgerWriter&) = delete;
  LedgerWriter& operator=(const LedgerWriter&) = delete;

  // Opens the spool (an error here is a start-up error) and the store (unreachable is
  // not: records are spooled until it is back), then starts the thread.
  Status Start();
  // Queues one record; false (and counted lost, queue_full) when the queue is full.
  bool Submit(accounting::UsageRecord record);
  // Waits until every record submitted before the call is written, spooled or counted
  // lost.
  void Flush();
  // Drains the queue (see above) and joins the thread. Idempotent.
  void Stop();
  WriterStats stats() const;
  std::string DescribeStore() const { return describe_; }

 private:
  void Run();
  // Writes or spools one batch; returns when it is durable (or counted lost).
  void Persist(std::vector<accounting::UsageRecord>& batch);
  void Spool(std::vector<accounting::UsageRecord>& batch);
  void TryReconnect(std::chrono::steady_clock::time_point now);
  void ReplayOneSegment();
  void MaybeRetain(std::chrono::steady_clock::time_point now);
  void PublishSpool();

  std::unique_ptr<LedgerStore> store_;
  const std::string describe_;
  ledger::Spool spool_;
  const WriterOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;       // work for the thread
  std::condition_variable done_cv_;  // progress for Flush
  std::deque<accounting::UsageRecord> queue_;
  uint64_t queued_seq_ = 0;     // records accepted into the queue so far
  uint64_t persisted_seq_ = 0;  // of those, how many are durable or counted lost
  bool stopping_ = false;
  bool flush_requested_ = false;
  std::thread thread_;
  bool started_ = false;

  // Writer-thread state.
  bool store_up_ = false;
  std::chrono::milliseconds backoff_{500};
  std::chrono::steady_clock::time_point next_retry_{};
  std::chrono::steady_clock::time_point next_retention_{};

  std::atomic<uint64_t> submitted_{0}, written_{0}, spooled_{0}, replayed_{0};
  std::atomic<uint64_t> lost_queue_full_{0}, lost_spool_full_{0}, lost_spool_error_{0},
      lost_corrupt_{0};
  std::atomic<uint64_t> write_failures_{0}, deleted_{0};
  std::atomic<int64_t> queue_depth_{0}, spool_records_{0}, spool_bytes_{0};
  std::atomic<bool> store_up_public_{false};
};

}  // namespace kinference::ledger
