#include "ledger/writer.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace kinference::ledger {

using Clock = std::chrono::steady_clock;
namespace {
constexpr std::chrono::milliseconds kMaxBackoff{30'000};
constexpr std::chrono::minutes kRetentionEvery{60};
}  // namespace

LedgerWriter::LedgerWriter(std::unique_ptr<LedgerStore> store, std::string spool_dir,
                           int64_t spool_max_bytes, WriterOptions options)
    : store_(std::move(store)),
      describe_(store_ ? store_->Describe() : "none"),
      spool_(std::move(spool_dir), spool_max_bytes),
      options_(options) {}

LedgerWriter::~LedgerWriter() { Stop(); }

Status LedgerWriter::Start() {
  Status s = spool_.Open();
  if (!s.ok()) return s;
  PublishSpool();
  if (!spool_.empty())
    spdlog::info("ledger: {} records wait in the spool {} from an earlier run", spool_.records(),
                 spool_.dir());
  s = store_->Open();
  store_up_ = s.ok();
  store_up_public_ = store_up_;
  if (!s.ok()) {
    write_failures_++;
    if (s.code() != ErrorCode::kUnavailable) return s;  // e.g. a newer schema: a config error
    spdlog::warn("ledger: {} unreachable at start ({}); spooling to {} until it is back", describe_,
                 s.message(), spool_.dir());
    next_retry_ = Clock::now() + backoff_;
  } else {
    spdlog::info("ledger: writing usage records to {}", describe_);
  }
  next_retention_ = Clock::now();
  started_ = true;
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

bool LedgerWriter::Submit(accounting::UsageRecord record) {
  submitted_++;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int64_t>(queue_.size()) >= options_.queue_capacity || stopping_) {
      lost_queue_full_++;
      return false;
    }
    queue_.push_back(std::move(record));
    ++queued_seq_;
    queue_depth_ = static_cast<int64_t>(queue_.size());
    if (static_cast<int64_t>(queue_.size()) < options_.batch_size) return true;
  }
  cv_.notify_one();
  return true;
}

void LedgerWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_) return;
  const uint64_t target = queued_seq_;
  flush_requested_ = true;
  cv_.notify_one();
  done_cv_.wait(lock, [&] { return persisted_seq_ >= target || !thread_.joinable(); });
}

void LedgerWriter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  started_ = false;
  done_cv_.notify_all();
}

WriterStats LedgerWriter::stats() const {
  WriterStats s;
  s.submitted = submitted_;
  s.written = written_;
  s.spooled = spooled_;
  s.replayed = replayed_;
  s.lost_queue_full = lost_queue_full_;
  s.lost_spool_full = lost_spool_full_;
  s.lost_spool_error = lost_spool_error_;
  s.lost_corrupt = lost_corrupt_;
  s.write_failures = write_failures_;
  s.deleted_by_retention = deleted_;
  s.queue_depth = queue_depth_;
  s.spool_records = spool_records_;
  s.spool_bytes = spool_bytes_;
  s.store_up = store_up_public_;
  return s;
}

void LedgerWriter::Run() {
  const auto interval = std::chrono::milliseconds(options_.flush_interval_ms);
  for (;;) {
    std::vector<accounting::UsageRecord> batch;
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, interval, [&] {
        return stopping_ || flush_requested_ ||
               static_cast<int64_t>(queue_.size()) >= options_.batch_size;
      });
      const size_t n = std::min(queue_.size(), static_cast<size_t>(options_.batch_size));
      batch.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      queue_depth_ = static_cast<int64_t>(queue_.size());
      if (queue_.empty()) flush_requested_ = false;
      stopping = stopping_;
    }
    const size_t taken = batch.size();
    if (taken > 0) Persist(batch);
    {
      std::lock_guard<std::mutex> lock(mu_);
      persisted_seq_ += taken;
    }
    done_cv_.notify_all();

    const auto now = Clock::now();
    if (!store_up_ && now >= next_retry_ && !stopping) TryReconnect(now);
    if (store_up_ && !spool_.empty() && !stopping) ReplayOneSegment();
    if (store_up_ && !stopping) MaybeRetain(now);

    if (stopping) {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) break;
    }
  }
  if (!spool_.empty())
    spdlog::warn("ledger: stopping with {} records in the spool {}; the next start replays them",
                 spool_.records(), spool_.dir());
}

void LedgerWriter::Persist(std::vector<accounting::UsageRecord>& batch) {
  if (store_up_) {
    Status s = store_->Write(batch);
    if (s.ok()) {
      written_ += batch.size();
      return;
    }
    write_failures_++;
    store_up_ = false;
    store_up_public_ = false;
    backoff_ = std::chrono::milliseconds(500);
    next_retry_ = Clock::now() + backoff_;
    spdlog::warn("ledger: write to {} failed ({}); spooling to {}", describe_, s.message(),
                 spool_.dir());
  }
  Spool(batch);
}

void LedgerWriter::Spool(std::vector<accounting::UsageRecord>& batch) {
  auto appended = spool_.Append(batch);
  size_t n = appended.ok() ? *appended : 0;
  spooled_ += n;
  if (!appended.ok()) {
    lost_spool_error_ += batch.size();
    spdlog::error("ledger: {} records lost: {}", batch.size(), appended.status().message());
  } else if (n < batch.size()) {
    lost_spool_full_ += batch.size() - n;
    spdlog::error("ledger: {} records lost: spool {} is full ({} bytes)", batch.size() - n,
                  spool_.dir(), spool_.bytes());
  }
  PublishSpool();
}

void LedgerWriter::TryReconnect(Clock::time_point now) {
  Status s = store_->Open();
  if (s.ok()) {
    store_up_ = true;
    store_up_public_ = true;
    spdlog::info("ledger: {} reachable again; replaying {} spooled records", describe_,
                 spool_.records());
    return;
  }
  write_failures_++;
  backoff_ = std::min(kMaxBackoff, backoff_ * 2);
  next_retry_ = now + backoff_;
}

void LedgerWriter::ReplayOneSegment() {
  std::vector<accounting::UsageRecord> records;
  std::string segment;
  int64_t corrupt = 0;
  Status s = spool_.ReadOldest(records, segment, corrupt);
  if (!s.ok() || segment.empty()) return;
  s = store_->Write(records);
  if (!s.ok()) {
    write_failures_++;
    store_up_ = false;
    store_up_public_ = false;
    backoff_ = std::chrono::milliseconds(500);
    next_retry_ = Clock::now() + backoff_;
    return;
  }
  written_ += records.size();
  replayed_ += records.size();
  if (corrupt > 0) {
    lost_corrupt_ += static_cast<uint64_t>(corrupt);
    spdlog::error("ledger: {} unreadable lines skipped in {}", corrupt, segment);
  }
  spool_.Remove(segment);
  PublishSpool();
}

void LedgerWriter::MaybeRetain(Clock::time_point now) {
  if (options_.retention_days <= 0 || now < next_retention_) return;
  next_retention_ = now + kRetentionEvery;
  const int64_t cutoff = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() -
                         options_.retention_days * 86'400'000;
  auto n = store_->DeleteBefore(cutoff);
  if (n.ok()) {
    deleted_ += static_cast<uint64_t>(*n);
    if (*n > 0) spdlog::info("ledger: retention deleted {} records", *n);
  }
}

void LedgerWriter::PublishSpool() {
  spool_records_ = spool_.records();
  spool_bytes_ = spool_.bytes();
}

}  // namespace kinference::ledger
