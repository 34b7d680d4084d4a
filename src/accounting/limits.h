// Budgets and rate limits per tenant: the decision logic, with time passed in by the
// caller (Unix seconds, UTC), no I/O. LocalLimiter holds the state in memory for one
// gateway; the Redis limiter (ledger/redis_limiter.h) holds the same state in Redis for
// several replicas and reuses Exceeded/RetryAfter/States below, so both decide alike.
//
// Limits (each optional; a tenant without any is not limited):
//   requests_per_minute, input_tokens_per_minute, output_tokens_per_minute: token
//     buckets, as Anthropic documents its rate limits ("token bucket algorithm": capacity
//     = the limit, refilled continuously at limit/60 per second, so a full minute's
//     allowance may be spent at once and then flows back). A request needs 1 request,
//     its input and its output tokens in the buckets.
//     Input tokens are the uncached ones (prompt - cached): cache reads do not count, as
//     Anthropic states for its input-tokens-per-minute limit; a reservation counts the
//     whole prompt (the cache hit is not known before dispatch) and the settlement
//     gives the cached part back.
//   max_concurrent_requests: requests admitted and not yet settled.
//   spend_per_day, spend_per_month: nano-USD per UTC day / calendar month (UTC).
// A request is admitted when every limit holds with its estimate added (bucket level >=
// need; concurrent < max; spent + estimate <= budget). Admitted, the estimate is
// reserved at once (taken from the buckets, added to the spend and concurrency), so
// concurrent requests cannot all pass on the same allowance; Settle replaces the
// estimate with the real usage when the request ends (tokens given back to the buckets,
// capped at their capacity, or taken beyond the estimate, which may leave a bucket in
// debt that later requests wait out; spend corrected on the reservation's own day and
// month). The overshoot of a limit is therefore bounded by the reservations in flight
// that turn out to be underestimates.
//
// Refusals: the first exceeded limit in LimitKind order names the error; the wait is
// the longest among the exceeded limits (bucket: until it holds the need again; spend:
// until the next UTC day or month; concurrency: kConcurrencyRetryAfterS). An estimate
// larger than a limit's capacity can never pass: too_large (the fronts say so, 400).
// A refusal passes soon (PassesSoon) when it is not too_large and its wait is at most
// kMaxRetryAfterS: only those carry Retry-After; the others tell clients not to retry
// (limit_headers.h).
//
// Thread-safety: the functions are pure; LocalLimiter is not thread-safe (the gateway
// calls it on its io_context thread).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "accounting/money.h"

namespace kinference::accounting {

enum class LimitKind {
  kSpendMonth,
  kSpendDay,
  kRequests,
  kInputTokens,
  kOutputTokens,
  kConcurrent,
};
// "spend_per_month", "spend_per_day", "requests", "input_tokens", "output_tokens",
// "concurrent_requests" (also the `limit` label of the rejection counter).
const char* LimitName(LimitKind kind);
inline bool IsSpend(LimitKind k) {
  return k == LimitKind::kSpendMonth || k == LimitKind::kSpendDay;
}

// What a tenant's requests do when the shared limit store (Redis) cannot be reached.
enum class OnUnavailable { kFailOpen, kFailClosed };

struct TenantLimits {
  std::optional<int64_t> requests_per_minute;
  std::optional<int64_t> input_tokens_per_minute;
  std::optional<int64_t> output_tokens_per_minute;
  std::optional<int64_t> max_concurrent_requests;
  std::optional<NanoUsd> spend_per_day;
  std::optional<NanoUsd> spend_per_month;
  OnUnavailable on_unavailable = OnUnavailable::kFailOpen;
  bool any() const;
  bool operator==(const TenantLimits&) const = default;
};

// Seconds a request refused for concurrency is told to wait (no refill time exists).
inline constexpr double kConcurrencyRetryAfterS = 1.0;

// The longest wait a refusal asks a client to sleep through (Retry-After), in seconds:
// one minute, a token bucket's whole refill time. The official SDKs sleep for a
// Retry-After before retrying (anthropic-sdk-python 2.17.0 for any value, up to ~49
// days; openai-python 3.63.0 up to 120 s, _base_client.py _calculate_retry_timeout), so
// a longer wait is not sent as one: x-should-retry: false instead.
inline constexpr double kMaxRetryAfterS = 60.0;

// Tokens and cost of one request: estimated before dispatch, real when settled.
struct Amounts {
  int64_t input_tokens = 0;   // uncached input (see above)
  int64_t output_tokens = 0;  // completion tokens
  NanoUsd cost = 0;
  bool operator==(const Amounts&) const = default;
};

struct Bucket {
  double level = 0;  // tokens (or requests) available; negative: in debt
  double ts = 0;     // Unix seconds of the last refill
  bool init = false;
};

// One tenant's state (in memory here, a Redis hash + sorted set in the Redis limiter).
struct TenantState {
  Bucket requests, input, output;
  int64_t concurrent = 0;
  int64_t day = 0;  // DayIndex of day_spent
  NanoUsd day_spent = 0;
  int64_t month = 0;  // MonthIndex of month_spent
  NanoUsd month_spent = 0;
};

// Brings every bucket to `now` (a bucket never seen starts full) and rolls the spend
// windows over to now's day and month.
void Refill(TenantState& s, const TenantLimits& limits, double now);
// The limits `est` exceeds in `s` (refilled to now), in LimitKind order.
std::vector<LimitKind> Exceeded(const TenantState& s, const TenantLimits& limits,
                                const Amounts& est);
// Whether `est` exceeds `kind`'s capacity itself (no wait helps).
bool TooLarge(LimitKind kind, const TenantLimits& limits, const Amounts& est);
// Seconds until `kind` admits `est` again in state `s` at `now`.
double RetryAfter(const TenantState& s, const TenantLimits& limits, const Amounts& est,
                  LimitKind kind, double now);

// One configured limit as the rate-limit headers report it.
struct LimitStatus {
  LimitKind kind;
  double limit = 0;      // requests or tokens per minute, concurrency, nano-USD
  double remaining = 0;  // >= 0
  double reset_s = 0;    // seconds until fully replenished (spend: window end)
};
std::vector<LimitStatus> States(const TenantState& s, const TenantLimits& limits, double now);

struct Admission {
  bool admitted = true;
  std::optional<LimitKind> exceeded;  // refused: the limit that names the error
  bool too_large = false;
  double retry_after_s = 0;
  std::vector<LimitStatus> states;  // after this request's reservation when admitted
  // The shared store was unreachable: admitted by fail-open or refused by fail-closed.
  bool unavailable = false;
};

// A refused request that may pass within kMaxRetryAfterS: not too_large, its wait at
// most that long (an unreachable limit store: always). False when admitted.
bool PassesSoon(const Admission& a);

// What Settle needs to undo or correct an admitted request's reservation.
struct Reservation {
  std::string tenant;
  std::string request_id;
  TenantLimits limits;
  Amounts reserved;
  int64_t day = 0, month = 0;
};

// Decides for `est` at `now`; admitted, reserves it in `s` and fills `reservation`.
Admission Reserve(TenantState& s, const TenantLimits& limits, const Amounts& est, double now,
                  Reservation* reservation);
// Replaces the reservation with `actual` (see above) and ends its concurrency slot.
void Settle(TenantState& s, const Reservation& r, const Amounts& actual, double now);

// The check on the request path, local or shared. Done runs exactly once: inline for
// LocalLimiter, later on the caller's executor for Redis.
class Limiter {
 public:
  using Done = std::function<void(Admission, std::optional<Reservation>)>;
  virtual ~Limiter() = default;
  virtual void Reserve(const std::string& tenant, const TenantLimits& limits, const Amounts& est,
                       const std::string& request_id, double now, Done done) = 0;
  virtual void Settle(const Reservation& r, const Amounts& actual, double now) = 0;
};

class LocalLimiter final : public Limiter {
 public:
  void Reserve(const std::string& tenant, const TenantLimits& limits, const Amounts& est,
               const std::string& request_id, double now, Done done) override;
  void Settle(const Reservation& r, const Amounts& actual, double now) override;
  // Spend already recorded in the ledger (start-up): the day's and month's totals.
  void SeedSpend(const std::string& tenant, int64_t day, NanoUsd day_spent, int64_t month,
                 NanoUsd month_spent);
  const TenantState* Find(const std::string& tenant) const;

 private:
  std::map<std::string, TenantState> tenants_;
};

}  // namespace kinference::accounting
