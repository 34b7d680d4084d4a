#include "ledger/accounting_service.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "accounting/calendar.h"

namespace kinference::ledger {

AccountingService::AccountingService(accounting::AccountingConfig config, double lease_s, Post post)
    : config_(std::move(config)), post_(std::move(post)) {
  if (config_.ledger.store != accounting::StoreKind::kNone) {
    const auto& l = config_.ledger;
    writer_ = std::make_unique<LedgerWriter>(
        MakeStore(l), l.spool_dir, l.spool_max_bytes,
        WriterOptions{l.queue_capacity, l.batch_size, l.flush_interval_ms, l.retention_days});
    queries_ = std::make_unique<UsageQueryService>(MakeStore(l), post_);
  }
  if (config_.redis) {
    redis_ = std::make_unique<RedisLimiter>(*config_.redis, lease_s, post_);
    limiter_ = redis_.get();
  } else {
    local_ = std::make_unique<accounting::LocalLimiter>();
    limiter_ = local_.get();
  }
}

AccountingService::~AccountingService() { Stop(); }

Status AccountingService::Start() {
  if (writer_) {
    Status s = writer_->Start();
    if (!s.ok()) return s;
  }
  // Local limits start from the spend already recorded today and this month.
  if (local_ && writer_ && (config_.limits.default_limits || !config_.limits.tenants.empty())) {
    auto store = MakeStore(config_.ledger);
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    Status s = store->Open();
    auto spend = s.ok() ? SpendSoFar(*store, now) : Result<std::map<std::string, TenantSpend>>(s);
    if (!spend.ok()) {
      spdlog::warn(
          "limits: the spend so far could not be read from the ledger ({}); "
          "today's and this month's budgets start from zero",
          spend.status().message());
    } else {
      for (const auto& [tenant, t] : *spend)
        local_->SeedSpend(tenant, accounting::DayIndex(now), t.day, accounting::MonthIndex(now),
                          t.month);
      if (!spend->empty())
        spdlog::info("limits: spend so far loaded from the ledger for {} tenants", spend->size());
    }
  }
  return Status::Ok();
}

void AccountingService::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (writer_) {
    writer_->Stop();
    WriterStats s = writer_->stats();
    spdlog::info("ledger: stopped; {} records written, {} in the spool, {} lost", s.written,
                 s.spool_records,
                 s.lost_queue_full + s.lost_spool_full + s.lost_spool_error + s.lost_corrupt);
  }
  if (redis_) redis_->Stop();
  if (queries_) queries_->Stop();
}

bool AccountingService::Submit(accounting::UsageRecord record) {
  return writer_ ? writer_->Submit(std::move(record)) : false;
}

void AccountingService::Query(accounting::UsageQuery q, UsageQueryService::Done done) {
  if (!queries_) {
    post_([done = std::move(done)] {
      done(Status(ErrorCode::kUnavailable, "no usage ledger is configured"));
    });
    return;
  }
  queries_->Run(std::move(q), std::move(done));
}

std::optional<WriterStats> AccountingService::writer_stats() const {
  if (!writer_) return std::nullopt;
  return writer_->stats();
}

std::optional<RedisLimiterStats> AccountingService::redis_stats() const {
  if (!redis_) return std::nullopt;
  return redis_->stats();
}

void AccountingService::FlushLedger() {
  if (writer_) writer_->Flush();
}

}  // namespace kinference::ledger
