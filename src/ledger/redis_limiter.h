// RedisLimiter: the budgets and rate limits of accounting/limits.h shared by every
// gateway replica through one Redis (Debian's redis-server; hiredis client). Each
// reservation and settlement is one Lua script (EVALSHA), which Redis runs atomically,
// so replicas admitting at the same moment cannot spend the same allowance twice.
//
// Keys per tenant (key_prefix, default "kinference:"):
//   <prefix>limits:{<tenant>}       hash: bucket levels and refill times (requests, input,
//                                   output), the spend of the current UTC day and month
//   <prefix>concurrent:{<tenant>}   sorted set: request ids admitted and not yet settled,
//                                   scored by a lease expiry, so a replica that dies
//                                   with requests in flight gives their slots back when
//                                   the lease ends (lease_s; the gateway passes its
//                                   request timeout plus drain grace)
// Both expire after 40 days without use (a month's spend must outlive the month).
// The script applies the same refill, checks and reservation as limits.h; the reply is
// the tenant's state, from which Exceeded / RetryAfter / States in limits.h build the
// Admission, so local and shared limits decide alike (tests/ledger check both on the
// same scenarios). Times come from the calling gateway's clock (Unix seconds): replicas
// should be NTP-synchronised; a refill time from the future counts as no time passed.
//
// Redis unreachable (connection refused or lost, timeout, queue full): the request's
// tenant decides (TenantLimits::on_unavailable): fail_open admits it unchecked,
// fail_closed refuses it; either way Admission::unavailable is set. After a failure the
// limiter does not try Redis again for 1 s (every request in that second is decided by
// its tenant's setting at once, without waiting for a timeout). Settlements that cannot
// reach Redis are dropped and counted: the buckets refill by themselves, and the
// concurrency slot is freed when its lease ends.
//
// Threads: `workers` threads, each with its own connection and its own bounded queue
// (kMaxPending / workers jobs). A tenant's jobs all go to one worker, chosen by a hash of
// the tenant, and run in the order they were queued: a reservation queued after a
// settlement of the same tenant sees it applied (a client sending one request at a time
// under max_concurrent_requests 1 finds its previous slot free), as with LocalLimiter.
// Different tenants spread over the workers. Done callbacks are handed to `post` (the
// gateway posts them to its io_context), never run on the caller's stack.
//
// Thread-safety: Reserve, Settle and stats are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "accounting/config.h"
#include "accounting/limits.h"

namespace kinference::ledger {

struct RedisLimiterStats {
  uint64_t checks = 0;       // reservations decided by Redis
  uint64_t unavailable = 0;  // reservations decided by a tenant's fail_open/fail_closed
  uint64_t settle_dropped = 0;
  uint64_t errors = 0;  // connection or command failures
  bool up = false;
};

class RedisLimiter final : public accounting::Limiter {
 public:
  using Post = std::function<void(std::function<void()>)>;
  // Jobs queued at most, over all workers (each holds kMaxPending / workers).
  static constexpr size_t kMaxPending = 10000;

  RedisLimiter(accounting::RedisConfig config, double lease_s, Post post, int workers = 2);
  ~RedisLimiter() override;  // Stop()
  RedisLimiter(const RedisLimiter&) = delete;
  RedisLimiter& operator=(const RedisLimiter&) = delete;

  void Reserve(const std::string& tenant, const accounting::TenantLimits& limits,
               const accounting::Amounts& est, const std::string& request_id, double now,
               Done done) override;
  void Settle(const accounting::Reservation& r, const accounting::Amounts& actual,
              double now) override;
  // Finishes queued jobs and joins the workers. Idempotent.
  void Stop();
  RedisLimiterStats stats() const;

 private:
  struct Job {
    bool settle = false;
    std::string tenant, request_id;
    accounting::TenantLimits limits;
    accounting::Amounts amounts;  // estimate (reserve) or actual (settle)
    accounting::Reservation reservation;
    double now = 0;
    Done done;
  };
  class Connection;
  // One worker: its queue (FIFO) and thread.
  struct Shard {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Job> jobs;
    bool stopping = false;
    std::thread thread;
  };

  void Work(Shard& shard);
  void Enqueue(Job job);
  void Decide(Connection& conn, Job& job);
  void DecideUnavailable(Job& job);
  std::string Key(const char* kind, const std::string& tenant) const;

  const accounting::RedisConfig config_;
  const double lease_s_;
  const Post post_;
  std::vector<std::unique_ptr<Shard>> shards_;
  size_t max_pending_per_shard_;
  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> down_until_ms_{0};  // steady-clock ms; no Redis call before then

  std::atomic<uint64_t> checks_{0}, unavailable_{0}, settle_dropped_{0}, errors_{0};
  std::atomic<bool> up_{false};
};

}  // namespace kinference::ledger
