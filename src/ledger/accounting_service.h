// AccountingService: everything the gateway needs for accounting behind one object: the
// ledger writer (records made durable off the request path), the limiter (local, or
// Redis when accounting.redis is set), the usage query service, and the price table.
// Built from the config's accounting section; the gateway shell owns one.
//
// Start: opens the spool and the store (an unreachable store is not fatal: records are
// spooled), and with local limits loads the current UTC day's and month's spend per
// tenant from the ledger, so a restart does not hand out fresh budgets. Stop: after the
// gateway's drain, writes or spools every queued record (graceful stop loses nothing),
// then stops the limiter's and the query service's threads.
//
// Thread-safety: Reserve's Done and Query's Done run through `post` (the gateway's
// io_context); Submit, Settle, stats are safe from any thread; Start and Stop from the
// owner.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "accounting/config.h"
#include "accounting/limits.h"
#include "accounting/usage_query.h"
#include "accounting/usage_record.h"
#include "ledger/query_service.h"
#include "ledger/redis_limiter.h"
#include "ledger/writer.h"

namespace kinference::ledger {

class AccountingService {
 public:
  using Post = std::function<void(std::function<void()>)>;

  // `lease_s`: how long a shared concurrency slot outlives a replica that died holding
  // it (the gateway passes its request timeout plus drain grace, real seconds).
  AccountingService(accounting::AccountingConfig config, double lease_s, Post post);
  ~AccountingService();
  AccountingService(const AccountingService&) = delete;
  AccountingService& operator=(const AccountingService&) = delete;

  // Errors: a spool directory that cannot be created, a database from a newer program.
  Status Start();
  void Stop();

  const accounting::AccountingConfig& config() const { return config_; }
  bool ledger_enabled() const { return writer_ != nullptr; }
  bool shared_limits() const { return redis_ != nullptr; }

  // Limits of `tenant`, or nullptr when it has none.
  const accounting::TenantLimits* LimitsFor(const std::string& tenant) const {
    return config_.limits.For(tenant);
  }
  accounting::Limiter& limiter() { return *limiter_; }
  std::optional<accounting::Price> PriceFor(const std::string& provider,
                                            const std::string& model) const {
    return config_.prices.Lookup(provider, model);
  }

  // Queues a record for the ledger (no-op without one); false when it could not be
  // queued (counted lost).
  bool Submit(accounting::UsageRecord record);
  // Runs a usage query (kUnavailable without a ledger).
  void Query(accounting::UsageQuery q, UsageQueryService::Done done);

  std::optional<WriterStats> writer_stats() const;
  std::optional<RedisLimiterStats> redis_stats() const;
  // Waits until every record submitted so far is written or spooled (tests, drain).
  void FlushLedger();

 private:
  accounting::AccountingConfig config_;
  Post post_;
  std::unique_ptr<LedgerWriter> writer_;
  std::unique_ptr<UsageQueryService> queries_;
  std::unique_ptr<RedisLimiter> redis_;
  std::unique_ptr<accounting::LocalLimiter> local_;
  accounting::Limiter* limiter_ = nullptr;
  bool stopped_ = false;
};

}  // namespace kinference::ledger
