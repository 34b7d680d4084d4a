// UsageQueryService: runs usage queries (GET /v1/usage) against the ledger on its own
// thread and connection, so a slow query never stalls the gateway's io thread or the
// ledger writer. At most kMaxPending queries wait; more are refused (kResourceExhausted,
// 429 at the API). Results are handed to `post` (the gateway's io_context).
//
// Also: the spend already in the ledger for the current UTC day and month per tenant,
// which a gateway with local (non-Redis) limits loads at start, so a restart does not
// hand every tenant a fresh daily budget.
//
// Thread-safety: Run and Stop are safe from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "accounting/usage_query.h"
#include "common/status.h"
#include "ledger/store.h"

namespace kinference::ledger {

class UsageQueryService {
 public:
  using Post = std::function<void(std::function<void()>)>;
  using Done = std::function<void(Result<std::vector<accounting::UsageRow>>)>;
  static constexpr size_t kMaxPending = 16;

  UsageQueryService(std::unique_ptr<LedgerStore> store, Post post);
  ~UsageQueryService();  // Stop()
  UsageQueryService(const UsageQueryService&) = delete;
  UsageQueryService& operator=(const UsageQueryService&) = delete;

  void Run(accounting::UsageQuery q, Done done);
  void Stop();

 private:
  void Work();

  std::unique_ptr<LedgerStore> store_;
  bool open_ = false;
  Post post_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<accounting::UsageQuery, Done>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

struct TenantSpend {
  accounting::NanoUsd day = 0, month = 0;
};
// Spend per tenant recorded in `store` for the UTC day and month of `now` (Unix s).
Result<std::map<std::string, TenantSpend>> SpendSoFar(LedgerStore& store, double now);

}  // namespace kinference::ledger
