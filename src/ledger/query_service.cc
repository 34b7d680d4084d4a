#include "ledger/query_service.h"

#include "accounting/calendar.h"

namespace kinference::ledger {

UsageQueryService::UsageQueryService(std::unique_ptr<LedgerStore> store, Post post)
    : store_(std::move(store)), post_(std::move(post)) {
  thread_ = std::thread([this] { Work(); });
}

UsageQueryService::~UsageQueryService() { Stop(); }

void UsageQueryService::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void UsageQueryService::Run(accounting::UsageQuery q, Done done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_ && jobs_.size() < kMaxPending) {
      jobs_.emplace_back(std::move(q), std::move(done));
      cv_.notify_one();
      return;
    }
  }
  post_([done = std::move(done)] {
    done(
        Status(ErrorCode::kResourceExhausted, "too many usage queries in progress; retry shortly"));
  });
}

void UsageQueryService::Work() {
  for (;;) {
    std::pair<accounting::UsageQuery, Done> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) {
        // Queries still waiting get an answer (the gateway is shutting down).
        while (!jobs_.empty()) {
          auto done = std::move(jobs_.front().second);
          jobs_.pop_front();
          post_([done = std::move(done)] {
            done(Status(ErrorCode::kUnavailable, "the gateway is shutting down"));
          });
        }
        return;
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Result<std::vector<accounting::UsageRow>> result =
        Status(ErrorCode::kUnavailable, "no ledger store");
    if (store_) {
      if (!open_) {
        Status s = store_->Open();
        open_ = s.ok();
        if (!s.ok()) result = s;
      }
      if (open_) {
        result = store_->Query(job.first);
        if (!result.ok() && result.status().code() == ErrorCode::kUnavailable) open_ = false;
      }
    }
    if (result.ok() && result->size() > accounting::kMaxUsageRows)
      result = InvalidArgument("more than " + std::to_string(accounting::kMaxUsageRows) +
                               " rows: narrow the range or group by fewer keys");
    post_([done = std::move(job.second), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  }
}

Result<std::map<std::string, TenantSpend>> SpendSoFar(LedgerStore& store, double now) {
  std::map<std::string, TenantSpend> out;
  accounting::UsageQuery q;
  q.group_by = {accounting::GroupBy::kTenant};
  q.to_ms = static_cast<int64_t>(now * 1000) + 86'400'000;  // records of requests in flight
  q.from_ms = accounting::MonthStart(accounting::MonthIndex(now)) * 1000;
  auto month = store.Query(q);
  if (!month.ok()) return month.status();
  for (const auto& row : *month) out[row.keys[0]].month = row.cost_nano_usd;
  q.from_ms = accounting::DayStart(accounting::DayIndex(now)) * 1000;
  auto day = store.Query(q);
  if (!day.ok()) return day.status();
  for (const auto& row : *day) out[row.keys[0]].day = row.cost_nano_usd;
  return out;
}

}  // namespace kinference::ledger
