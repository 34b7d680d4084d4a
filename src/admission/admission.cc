#include "admission/admission.h"

#include <algorithm>
#include <cmath>

namespace kinference::admission {

AdmissionController::AdmissionController(Options options) : options_(options) {}

void AdmissionController::SetEndpoint(const std::string& id, const std::string& pool,
                                      int max_in_flight) {
  EndpointState& e = endpoints_[id];
  e.pool = pool;
  e.configured = max_in_flight;
  pools_[pool];
}

void AdmissionController::RemoveEndpoint(const std::string& id) { endpoints_.erase(id); }

void AdmissionController::SetAvailable(const std::string& id, bool available) {
  if (auto it = endpoints_.find(id); it != endpoints_.end()) it->second.available = available;
}

void AdmissionController::ObserveMetrics(const std::string& id, double running, double waiting) {
  auto it = endpoints_.find(id);
  if (it == endpoints_.end() || it->second.configured != kDerive) return;
  if (!std::isfinite(running) || !std::isfinite(waiting) || running < 0) return;
  EndpointState& e = it->second;
  int r = static_cast<int>(std::min(running, 1e6));
  if (waiting > 0 && r > 0) {
    e.concurrency = r;  // saturated: running is what the engine can hold now
  } else if (e.concurrency > 0 && r > e.concurrency) {
    e.concurrency = r;  // it holds more than we thought
  }
}

int AdmissionController::Limit(const std::string& id) const {
  auto it = endpoints_.find(id);
  if (it == endpoints_.end()) return kUnlimited;
  const EndpointState& e = it->second;
  if (e.configured > 0) return e.configured;
  if (e.configured == kUnlimited || e.concurrency <= 0) return kUnlimited;
  return e.concurrency + std::max(kMinHeadroom, e.concurrency / kHeadroomDivisor);
}

int AdmissionController::InFlight(const std::string& id) const {
  auto it = endpoints_.find(id);
  return it == endpoints_.end() ? 0 : it->second.in_flight;
}

bool AdmissionController::HasRoom(const std::string& id) const {
  if (auto it = endpoints_.find(id); it != endpoints_.end() && !it->second.available) return false;
  int limit = Limit(id);
  return limit == kUnlimited || InFlight(id) < limit;
}

std::vector<std::string> AdmissionController::WithRoom(
    std::span<const std::string> candidates) const {
  std::vector<std::string> out;
  for (const auto& c : candidates) {
    if (HasRoom(c)) out.push_back(c);
  }
  return out;
}

void AdmissionController::OnDispatched(const std::string& endpoint, const std::string& tenant) {
  auto it = endpoints_.find(endpoint);
  if (it != endpoints_.end()) ++it->second.in_flight;
  ++tenant_in_flight_[tenant];
}

void AdmissionController::OnFinished(const std::string& endpoint, const std::string& tenant,
                                     Seconds now) {
  auto it = endpoints_.find(endpoint);
  if (it != endpoints_.end()) {
    if (it->second.in_flight > 0) --it->second.in_flight;
    auto& completions = pools_[it->second.pool].completions;
    int64_t second = static_cast<int64_t>(std::floor(now));
    if (!completions.empty() && completions.back().first == second) {
      ++completions.back().second;
    } else {
      completions.emplace_back(second, 1);
    }
    int64_t oldest = second - static_cast<int64_t>(options_.rate_window_s);
    std::erase_if(completions, [&](const auto& c) { return c.first <= oldest; });
  }
  auto t = tenant_in_flight_.find(tenant);
  if (t != tenant_in_flight_.end() && --t->second <= 0) tenant_in_flight_.erase(t);
}

EnqueueResult AdmissionController::Enqueue(Waiter waiter, Seconds now) {
  EnqueueResult result;
  std::string pool = waiter.candidates.empty() ? "" : PoolOf(waiter.candidates.front());
  PoolState& ps = pools_[pool];
  size_t in_pool = static_cast<size_t>(
      std::count_if(queue_.begin(), queue_.end(), [&](const Entry& e) { return e.pool == pool; }));
  if (in_pool >= static_cast<size_t>(std::max(options_.max_queue, 0))) {
    // Shed the lowest-priority, latest waiter of the pool if the arrival outranks it.
    auto victim = queue_.end();
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->pool != pool) continue;
      if (victim == queue_.end() || it->waiter.priority <= victim->waiter.priority) victim = it;
    }
    if (victim == queue_.end() || victim->waiter.priority >= waiter.priority) {
      ++ps.stats.refused_queue_full_total;
      result.outcome = EnqueueOutcome::kRefused;
      return result;
    }
    result.evicted = victim->waiter.id;
    ++ps.stats.evicted_total;
    queue_.erase(victim);
  }
  ++ps.stats.queued_total;
  Seconds deadline = now + options_.queue_timeout_s;
  queue_.push_back(Entry{std::move(waiter), pool, deadline});
  return result;
}

void AdmissionController::Cancel(TicketId id) {
  std::erase_if(queue_, [&](const Entry& e) { return e.waiter.id == id; });
}

bool AdmissionController::AnyRoom(const Entry& e) const {
  return std::any_of(e.waiter.candidates.begin(), e.waiter.candidates.end(),
                     [&](const std::string& c) { return HasRoom(c); });
}

size_t PickByAffinity(std::span<const double> affinity, std::span<const double> anywhere,
                      int first_passed_over) {
  if (affinity.empty() || first_passed_over >= kMaxPassOvers) return 0;
  size_t pick = 0;
  for (size_t i = 1; i < affinity.size(); ++i) {
    if (affinity[i] > affinity[pick]) pick = i;
  }
  if (affinity[pick] > 0) return pick;
  // No hit where there is room: the earliest waiter no endpoint caches goes (its prefill
  // costs the same anywhere); one cached elsewhere keeps waiting for its endpoint.
  for (size_t i = 0; i < affinity.size() && i < anywhere.size(); ++i) {
    if (anywhere[i] <= 0) return i;
  }
  return 0;
}

int AdmissionController::TenantLoad(const std::string& tenant) const {
  auto t = tenant_in_flight_.find(tenant);
  return t == tenant_in_flight_.end() ? 0 : t->second;
}

std::optional<TicketId> AdmissionController::NextAdmissible(const AffinityFn& affinity) {
  auto best = queue_.end();
  int best_tenant_load = 0;
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (!AnyRoom(*it)) continue;
    int load = TenantLoad(it->waiter.tenant);
    // queue_ is in arrival order: a later waiter wins only by priority or a lighter tenant.
    if (best == queue_.end() || it->waiter.priority > best->waiter.priority ||
        (it->waiter.priority == best->waiter.priority && load < best_tenant_load)) {
      best = it;
      best_tenant_load = load;
    }
  }
  if (best == queue_.end()) return std::nullopt;
  if (affinity) {
    // The window: the first waiters, from `best` on in arrival order, of best's class
    // (priority and tenant load) that may go now.
    std::vector<std::vector<Entry>::iterator> window;
    std::vector<double> values;
    std::vector<double> anywhere;
    for (auto it = best; it != queue_.end() && window.size() < kAffinityWindow; ++it) {
      if (it->waiter.priority != best->waiter.priority ||
          TenantLoad(it->waiter.tenant) != best_tenant_load)
        continue;
      std::vector<std::string> room = WithRoom(it->waiter.candidates);
      if (room.empty()) continue;
      window.push_back(it);
      values.push_back(affinity(it->waiter.id, room));
      anywhere.push_back(room.size() == it->waiter.candidates.size()
                             ? values.back()
                             : affinity(it->waiter.id, it->waiter.candidates));
    }
    size_t pick = PickByAffinity(values, anywhere, best->passed_over);
    if (pick != 0) {
      ++best->passed_over;
      best = window[pick];
    }
  }
  TicketId id = best->waiter.id;
  ++pools_[best->pool].stats.admitted_from_queue_total;
  queue_.erase(best);
  return id;
}

std::vector<TicketId> AdmissionController::Expired(Seconds now) {
  std::vector<TicketId> out;
  std::erase_if(queue_, [&](const Entry& e) {
    if (e.deadline > now) return false;
    out.push_back(e.waiter.id);
    ++pools_[e.pool].stats.refused_timeout_total;
    return true;
  });
  return out;
}

std::optional<Seconds> AdmissionController::NextDeadline() const {
  std::optional<Seconds> next;
  for (const auto& e : queue_) {
    if (!next || e.deadline < *next) next = e.deadline;
  }
  return next;
}

int AdmissionController::RetryAfterS(const std::string& pool, Seconds now) const {
  auto it = pools_.find(pool);
  size_t ahead = static_cast<size_t>(
      std::count_if(queue_.begin(), queue_.end(), [&](const Entry& e) { return e.pool == pool; }));
  double done = 0;
  if (it != pools_.end()) {
    int64_t oldest = static_cast<int64_t>(std::floor(now - options_.rate_window_s));
    for (const auto& [second, n] : it->second.completions) {
      if (second > oldest) done += n;
    }
  }
  double rate = done / std::max<double>(options_.rate_window_s, 1);  // completions per second
  double wait = rate > 0 ? static_cast<double>(ahead + 1) / rate : 60;
  return static_cast<int>(std::clamp(std::ceil(wait), 1.0, 60.0));
}

std::string AdmissionController::PoolOf(const std::string& endpoint) const {
  auto it = endpoints_.find(endpoint);
  return it == endpoints_.end() ? "" : it->second.pool;
}

PoolStats AdmissionController::Stats(const std::string& pool) const {
  PoolStats s;
  if (auto it = pools_.find(pool); it != pools_.end()) s = it->second.stats;
  s.waiting = static_cast<size_t>(
      std::count_if(queue_.begin(), queue_.end(), [&](const Entry& e) { return e.pool == pool; }));
  return s;
}

std::vector<std::string> AdmissionController::Pools() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : pools_) out.push_back(name);
  return out;
}

}  // namespace kinference::admission
