#include "accounting/limits.h"

#include <algorithm>
#include <cmath>

#include "accounting/calendar.h"

namespace kinference::accounting {
namespace {

void RefillBucket(Bucket& b, std::optional<int64_t> cap, double now) {
  if (!cap) return;
  const double c = static_cast<double>(*cap);
  if (!b.init) {
    b = Bucket{c, now, true};
    return;
  }
  const double dt = std::max(0.0, now - b.ts);
  b.level = std::min(c, b.level + dt * c / 60.0);
  b.ts = std::max(b.ts, now);
}

// Seconds until bucket `b` (refilled to now) holds `need`, at cap/60 per second.
double BucketWait(const Bucket& b, int64_t cap, double need) {
  if (b.level >= need || cap <= 0) return 0;
  return (need - b.level) / (static_cast<double>(cap) / 60.0);
}

double BucketReset(const Bucket& b, int64_t cap) {
  if (cap <= 0) return 0;
  return std::max(0.0, (static_cast<double>(cap) - b.level) / (static_cast<double>(cap) / 60.0));
}

void GiveBack(Bucket& b, std::optional<int64_t> cap, double delta) {
  if (!cap || !b.init) return;
  b.level = std::min(static_cast<double>(*cap), b.level + delta);
}

}  // namespace

const char* LimitName(LimitKind kind) {
  switch (kind) {
    case LimitKind::kSpendMonth:
      return "spend_per_month";
    case LimitKind::kSpendDay:
      return "spend_per_day";
    case LimitKind::kRequests:
      return "requests";
    case LimitKind::kInputTokens:
      return "input_tokens";
    case LimitKind::kOutputTokens:
      return "output_tokens";
    case LimitKind::kConcurrent:
      return "concurrent_requests";
  }
  return "unknown";
}

bool PassesSoon(const Admission& a) {
  if (a.admitted) return false;
  if (a.unavailable) return true;
  return !a.too_large && a.retry_after_s <= kMaxRetryAfterS;
}

bool TenantLimits::any() const {
  return requests_per_minute || input_tokens_per_minute || output_tokens_per_minute ||
         max_concurrent_requests || spend_per_day || spend_per_month;
}

void Refill(TenantState& s, const TenantLimits& l, double now) {
  RefillBucket(s.requests, l.requests_per_minute, now);
  RefillBucket(s.input, l.input_tokens_per_minute, now);
  RefillBucket(s.output, l.output_tokens_per_minute, now);
  const int64_t day = DayIndex(now), month = MonthIndex(now);
  if (s.day != day) {
    s.day = day;
    s.day_spent = 0;
  }
  if (s.month != month) {
    s.month = month;
    s.month_spent = 0;
  }
}

std::vector<LimitKind> Exceeded(const TenantState& s, const TenantLimits& l, const Amounts& est) {
  std::vector<LimitKind> out;
  if (l.spend_per_month && s.month_spent + est.cost > *l.spend_per_month)
    out.push_back(LimitKind::kSpendMonth);
  if (l.spend_per_day && s.day_spent + est.cost > *l.spend_per_day)
    out.push_back(LimitKind::kSpendDay);
  if (l.requests_per_minute && s.requests.level < 1) out.push_back(LimitKind::kRequests);
  if (l.input_tokens_per_minute && s.input.level < static_cast<double>(est.input_tokens))
    out.push_back(LimitKind::kInputTokens);
  if (l.output_tokens_per_minute && s.output.level < static_cast<double>(est.output_tokens))
    out.push_back(LimitKind::kOutputTokens);
  if (l.max_concurrent_requests && s.concurrent >= *l.max_concurrent_requests)
    out.push_back(LimitKind::kConcurrent);
  return out;
}

bool TooLarge(LimitKind kind, const TenantLimits& l, const Amounts& est) {
  switch (kind) {
    case LimitKind::kSpendMonth:
      return l.spend_per_month && est.cost > *l.spend_per_month;
    case LimitKind::kSpendDay:
      return l.spend_per_day && est.cost > *l.spend_per_day;
    case LimitKind::kRequests:
      return l.requests_per_minute && *l.requests_per_minute < 1;
    case LimitKind::kInputTokens:
      return l.input_tokens_per_minute && est.input_tokens > *l.input_tokens_per_minute;
    case LimitKind::kOutputTokens:
      return l.output_tokens_per_minute && est.output_tokens > *l.output_tokens_per_minute;
    case LimitKind::kConcurrent:
      return l.max_concurrent_requests && *l.max_concurrent_requests < 1;
  }
  return false;
}

double RetryAfter(const TenantState& s, const TenantLimits& l, const Amounts& est, LimitKind kind,
                  double now) {
  switch (kind) {
    case LimitKind::kSpendMonth:
      return std::max(0.0, static_cast<double>(MonthStart(MonthIndex(now) + 1)) - now);
    case LimitKind::kSpendDay:
      return std::max(0.0, static_cast<double>(DayStart(DayIndex(now) + 1)) - now);
    case LimitKind::kRequests:
      return BucketWait(s.requests, l.requests_per_minute.value_or(0), 1);
    case LimitKind::kInputTokens:
      return BucketWait(s.input, l.input_tokens_per_minute.value_or(0),
                        static_cast<double>(est.input_tokens));
    case LimitKind::kOutputTokens:
      return BucketWait(s.output, l.output_tokens_per_minute.value_or(0),
                        static_cast<double>(est.output_tokens));
    case LimitKind::kConcurrent:
      return kConcurrencyRetryAfterS;
  }
  return 0;
}

std::vector<LimitStatus> States(const TenantState& s, const TenantLimits& l, double now) {
  std::vector<LimitStatus> out;
  auto bucket = [&](LimitKind kind, std::optional<int64_t> cap, const Bucket& b) {
    if (!cap) return;
    out.push_back({kind, static_cast<double>(*cap), std::max(0.0, std::floor(b.level)),
                   BucketReset(b, *cap)});
  };
  if (l.spend_per_month)
    out.push_back({LimitKind::kSpendMonth, static_cast<double>(*l.spend_per_month),
                   static_cast<double>(std::max<NanoUsd>(0, *l.spend_per_month - s.month_spent)),
                   static_cast<double>(MonthStart(MonthIndex(now) + 1)) - now});
  if (l.spend_per_day)
    out.push_back({LimitKind::kSpendDay, static_cast<double>(*l.spend_per_day),
                   static_cast<double>(std::max<NanoUsd>(0, *l.spend_per_day - s.day_spent)),
                   static_cast<double>(DayStart(DayIndex(now) + 1)) - now});
  bucket(LimitKind::kRequests, l.requests_per_minute, s.requests);
  bucket(LimitKind::kInputTokens, l.input_tokens_per_minute, s.input);
  bucket(LimitKind::kOutputTokens, l.output_tokens_per_minute, s.output);
  if (l.max_concurrent_requests)
    out.push_back(
        {LimitKind::kConcurrent, static_cast<double>(*l.max_concurrent_requests),
         static_cast<double>(std::max<int64_t>(0, *l.max_concurrent_requests - s.concurrent)), 0});
  return out;
}

Admission Reserve(TenantState& s, const TenantLimits& l, const Amounts& est, double now,
                  Reservation* reservation) {
  Refill(s, l, now);
  Admission a;
  std::vector<LimitKind> exceeded = Exceeded(s, l, est);
  if (!exceeded.empty()) {
    a.admitted = false;
    a.exceeded = exceeded.front();
    for (LimitKind k : exceeded) {
      a.too_large = a.too_large || TooLarge(k, l, est);
      a.retry_after_s = std::max(a.retry_after_s, RetryAfter(s, l, est, k, now));
    }
    a.states = States(s, l, now);
    return a;
  }
  if (l.requests_per_minute) s.requests.level -= 1;
  if (l.input_tokens_per_minute) s.input.level -= static_cast<double>(est.input_tokens);
  if (l.output_tokens_per_minute) s.output.level -= static_cast<double>(est.output_tokens);
  s.concurrent += 1;
  s.day_spent += est.cost;
  s.month_spent += est.cost;
  a.states = States(s, l, now);
  if (reservation) {
    reservation->limits = l;
    reservation->reserved = est;
    reservation->day = s.day;
    reservation->month = s.month;
  }
  return a;
}

void Settle(TenantState& s, const Reservation& r, const Amounts& actual, double now) {
  Refill(s, r.limits, now);
  GiveBack(s.input, r.limits.input_tokens_per_minute,
           static_cast<double>(r.reserved.input_tokens - actual.input_tokens));
  GiveBack(s.output, r.limits.output_tokens_per_minute,
           static_cast<double>(r.reserved.output_tokens - actual.output_tokens));
  s.concurrent = std::max<int64_t>(0, s.concurrent - 1);
  const NanoUsd delta = actual.cost - r.reserved.cost;
  if (s.day == r.day) s.day_spent = std::max<NanoUsd>(0, s.day_spent + delta);
  if (s.month == r.month) s.month_spent = std::max<NanoUsd>(0, s.month_spent + delta);
}

void LocalLimiter::Reserve(const std::string& tenant, const TenantLimits& limits,
                           const Amounts& est, const std::string& request_id, double now,
                           Done done) {
  Reservation r;
  r.tenant = tenant;
  r.request_id = request_id;
  Admission a = accounting::Reserve(tenants_[tenant], limits, est, now, &r);
  if (a.admitted) {
    done(std::move(a), std::move(r));
  } else {
    done(std::move(a), std::nullopt);
  }
}

void LocalLimiter::Settle(const Reservation& r, const Amounts& actual, double now) {
  accounting::Settle(tenants_[r.tenant], r, actual, now);
}

void LocalLimiter::SeedSpend(const std::string& tenant, int64_t day, NanoUsd day_spent,
                             int64_t month, NanoUsd month_spent) {
  TenantState& s = tenants_[tenant];
  s.day = day;
  s.day_spent = day_spent;
  s.month = month;
  s.month_spent = month_spent;
}

const TenantState* LocalLimiter::Find(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? nullptr : &it->second;
}

}  // namespace kinference::accounting
