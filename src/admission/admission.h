// Admission control: how many requests each endpoint may have in flight, and a bounded,
// ordered wait queue per pool for the requests that find every candidate endpoint full.
// Pure (no I/O, no clock, no threads): every call takes the current time, so the gateway
// (real clock) and the simulator (virtual clock) share it.
//
// Model (docs/reliability.md, "Admission control", has the whole text):
//  - Each endpoint has a limit on in-flight requests: configured (max_in_flight > 0), or
//    derived from what it reports (max_in_flight = kDerive): the engine's concurrency C is
//    learned from a scrape that shows it saturated (vllm:num_requests_waiting > 0: then
//    C = vllm:num_requests_running; a later scrape running more than C without waiting
//    raises it), and the limit is C + max(kMinHeadroom, C / kHeadroomDivisor), so each
//    engine keeps a short queue of its own and never idles between requests. Before any
//    saturation is seen a derived endpoint has no limit. kUnlimited: never limited
//    (external providers).
//  - A request is admitted at once when one of its candidate endpoints has room
//    (in flight < limit); the router then picks among those with room (WithRoom).
//    Otherwise it waits in the queue of its pool (the first candidate's pool), which holds
//    at most max_queue requests. A full queue sheds: an arrival of higher priority than
//    the lowest-priority waiter evicts it (the evicted request is refused), otherwise the
//    arrival is refused.
//  - When room appears (a request finished, a limit rose, an endpoint came back), the
//    next waiter is chosen among those with a candidate with room: highest priority first;
//    within a priority, the tenant with the fewest requests in flight (fair between
//    tenants: a tenant flooding the queue does not starve one sending a few); then the
//    earliest arrival.
//  - Cache affinity: with an affinity function (NextAdmissible's argument: the router's
//    expected prefix-cache hit of a waiter on the endpoints with room, in tokens), the
//    waiter admitted is the one of the first kAffinityWindow waiters of that order (same
//    priority and tenant load as the first) whose prompt an endpoint with room caches
//    most, the earliest among equals. When an endpoint with room caches none of them, the
//    earliest waiter that no endpoint caches goes (its prefill costs the same anywhere),
//    so a waiter cached on a full endpoint keeps waiting for it; when every one is cached
//    elsewhere the order is kept. A waiter passed over kMaxPassOvers
//    times goes next whatever the others' affinity, so none is delayed by more than that
//    many admissions. Why: under overload every slot that frees went to the oldest waiter
//    whatever the freed endpoint caches, so every strategy degraded to random placement
//    and recomputed shared prefixes everywhere (docs/reliability.md, "Cache affinity").
//  - A waiter whose deadline (arrival + queue_timeout_s) passes leaves the queue refused.
//  - Refusals carry a Retry-After estimate (RetryAfterS): the time for the queue ahead to
//    drain at the pool's recent completion rate, 1..60 s.
// Memory: at most max_queue waiters per pool plus the in-flight requests, which the
// limits bound; nothing grows with the offered load.
//
// Thread-safety: not thread-safe; one owner thread (the gateway's io thread).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace kinference::admission {

using TicketId = uint64_t;

// max_in_flight values besides a positive limit.
inline constexpr int kUnlimited = 0;
inline constexpr int kDerive = -1;
// Derived limit = C + max(kMinHeadroom, C / kHeadroomDivisor): our choice, a queue of a
// quarter of the engine's batch (at least 2) keeps it fed across request completions
// without holding requests there that another endpoint could serve first.
inline constexpr int kMinHeadroom = 2;
inline constexpr int kHeadroomDivisor = 4;
// Cache affinity (header comment). Our choices, measured in the simulator's overload
// scenario (docs/reliability.md, "Cache affinity"): a window of 64 waiters finds one that
// the freed endpoint caches, or one no endpoint caches, among the shared-prefix groups of a
// busy pool (16: 1.22 / 1.38 requests/s served at 1.5x / 3x; 64: 1.50 / 1.71), and 32
// pass-overs bound the reordering's cost to the waiter at the head to 32 admissions (16 and
// 64 served 1.43 / 1.58 and 1.51 / 1.71).
inline constexpr size_t kAffinityWindow = 64;
inline constexpr int kMaxPassOvers = 32;

struct Options {
  int max_queue = 256;           // waiters per pool (requests)
  Seconds queue_timeout_s = 10;  // longest wait in the queue before refusal
  // Completion-rate window for Retry-After (seconds of history).
  Seconds rate_window_s = 30;
};

struct Waiter {
  TicketId id = 0;
  std::string tenant;
  int priority = 0;  // higher first
  Seconds arrival = 0;
  std::vector<std::string> candidates;  // endpoint ids it may use (policies applied)
};

// Affinity of waiter `id` for `with_room` (its candidate endpoints that have room now, or
// all its candidates to learn whether any endpoint caches it):
// larger is better, 0 for none (tokens of expected prefix-cache hit, for the gateway).
using AffinityFn = std::function<double(TicketId id, std::span<const std::string> with_room)>;

// Which waiter of an affinity window to admit: `affinity` holds the window's values on the
// endpoints with room in admission order (the waiter that would go first without affinity
// at 0), `anywhere` the same waiters' values on all their candidates (room or not).
// Returns the position of the largest affinity, the earliest among equals; when every
// affinity is 0, the earliest waiter whose `anywhere` is 0 (no endpoint caches it), else 0;
// and 0 whenever the first has been passed over kMaxPassOvers times already
// (`first_passed_over`). Shared by the controller and the simulator's gateway queue.
size_t PickByAffinity(std::span<const double> affinity, std::span<const double> anywhere,
                      int first_passed_over);

enum class EnqueueOutcome { kQueued, kRefused };

struct EnqueueResult {
  EnqueueOutcome outcome = EnqueueOutcome::kQueued;
  // A waiter of lower priority shed to make room (the caller refuses it).
  std::optional<TicketId> evicted;
};

struct PoolStats {
  size_t waiting = 0;
  uint64_t queued_total = 0;
  uint64_t admitted_from_queue_total = 0;
  uint64_t refused_queue_full_total = 0;
  uint64_t refused_timeout_total = 0;
  uint64_t evicted_total = 0;
};

class AdmissionController {
 public:
  explicit AdmissionController(Options options = {});

  // Registers or updates an endpoint of `pool` (max_in_flight: a limit, kUnlimited or
  // kDerive). Its in-flight count is kept.
  void SetEndpoint(const std::string& id, const std::string& pool, int max_in_flight);
  void RemoveEndpoint(const std::string& id);
  // An endpoint that may not take requests now (ejected, breaker open) has no room,
  // whatever its limit; it keeps its in-flight count. Endpoints start available.
  void SetAvailable(const std::string& id, bool available);

  // A scrape of `id` (kDerive endpoints learn their concurrency; others ignore it).
  void ObserveMetrics(const std::string& id, double running, double waiting);

  // The current limit of `id` (kUnlimited when none), and its in-flight count.
  int Limit(const std::string& id) const;
  int InFlight(const std::string& id) const;
  bool HasRoom(const std::string& id) const;
  // The candidates with room, in the given order.
  std::vector<std::string> WithRoom(std::span<const std::string> candidates) const;

  // Bookkeeping of requests sent to an endpoint, and their end.
  void OnDispatched(const std::string& endpoint, const std::string& tenant);
  void OnFinished(const std::string& endpoint, const std::string& tenant, Seconds now);

  // Queues a request none of whose candidates has room (see the header comment).
  EnqueueResult Enqueue(Waiter waiter, Seconds now);
  // The client went away: the waiter leaves the queue (no-op if not queued).
  void Cancel(TicketId id);
  // The next waiter that may go now (a candidate has room), chosen as the header says
  // (with `affinity`, cache affinity within the window); it leaves the queue. Call again
  // after dispatching it (OnDispatched) for the next.
  std::optional<TicketId> NextAdmissible(const AffinityFn& affinity = {});
  // Waiters whose deadline passed by `now`; they leave the queue.
  std::vector<TicketId> Expired(Seconds now);
  // The earliest deadline of a waiter, if any (for a timer).
  std::optional<Seconds> NextDeadline() const;

  // Retry-After for a refusal in `pool` (seconds, 1..60).
  int RetryAfterS(const std::string& pool, Seconds now) const;

  // Pool of an endpoint ("" when unknown); per-pool counters; every pool's name.
  std::string PoolOf(const std::string& endpoint) const;
  PoolStats Stats(const std::string& pool) const;
  std::vector<std::string> Pools() const;
  size_t waiting() const { return queue_.size(); }
  const Options& options() const { return options_; }

 private:
  struct EndpointState {
    std::string pool;
    int configured = kDerive;
    int concurrency = 0;  // learned engine concurrency (kDerive); 0: not yet seen
    int in_flight = 0;
    bool available = true;
  };
  struct Entry {
    Waiter waiter;
    std::string pool;
    Seconds deadline = 0;
    int passed_over = 0;  // admissions that chose a later waiter by affinity
  };
  struct PoolState {
    PoolStats stats;
    // Completions per whole second, the last rate_window_s seconds (at most that many).
    std::vector<std::pair<int64_t, int>> completions;
  };

  bool AnyRoom(const Entry& e) const;
  int TenantLoad(const std::string& tenant) const;

  Options options_;
  std::map<std::string, EndpointState> endpoints_;
  std::map<std::string, int> tenant_in_flight_;
  std::map<std::string, PoolState> pools_;
  std::vector<Entry> queue_;  // arrival order
};

}  // namespace kinference::admission
