#include "gateway/admission_gate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace kinference::gateway {

namespace {

admission::Options MakeOptions(const GatewayConfig& c) {
  admission::Options o;
  o.max_queue = c.admission.max_queue;
  o.queue_timeout_s = c.admission.queue_timeout_s;
  return o;
}

}  // namespace

AdmissionGate::AdmissionGate(const GatewayConfig& config, boost::asio::any_io_executor executor,
                             const Clock& clock)
    : config_(config), clock_(clock), controller_(MakeOptions(config)), timer_(executor) {}

AdmissionGate::~AdmissionGate() { Stop(); }

void AdmissionGate::Stop() {
  stopped_ = true;
  timer_.cancel();
  auto waiters = std::move(waiters_);  // they hold the context: break the cycle
  waiters_.clear();
  for (const auto& [id, _] : waiters) controller_.Cancel(id);
}

AdmissionGate::Refusal AdmissionGate::OverloadRefusal(const std::string& pool,
                                                      const std::string& why) {
  int retry = controller_.RetryAfterS(pool, clock_.Now());
  return Refusal{Status(ErrorCode::kResourceExhausted,
                        fmt::format("The model's endpoints are at capacity ({}); retry after {} s.",
                                    why, retry)),
                 retry};
}

std::optional<admission::TicketId> AdmissionGate::Enqueue(std::shared_ptr<AdmissionWaiter> waiter,
                                                          const std::string& tenant, int priority,
                                                          std::vector<std::string> candidates,
                                                          Refusal& refusal) {
  const std::string pool = candidates.empty() ? "" : controller_.PoolOf(candidates.front());
  const Seconds now = clock_.Now();
  admission::TicketId id = next_ticket_++;
  admission::EnqueueResult r =
      controller_.Enqueue(admission::Waiter{id, tenant, priority, now, std::move(candidates)}, now);
  if (r.evicted) {
    auto it = waiters_.find(*r.evicted);
    if (it != waiters_.end()) {
      auto shed = std::move(it->second);
      waiters_.erase(it);
      if (shed) {
        Refusal e = OverloadRefusal(pool, "shed for a request of higher priority");
        shed->Refused(e.status, e.retry_after_s);
      }
    }
  }
  if (r.outcome == admission::EnqueueOutcome::kRefused) {
    refusal = OverloadRefusal(pool, "queue full");
    return std::nullopt;
  }
  waiters_[id] = std::move(waiter);
  ArmTimer();
  return id;
}

void AdmissionGate::Cancel(admission::TicketId ticket) {
  controller_.Cancel(ticket);
  waiters_.erase(ticket);
}

void AdmissionGate::Pump() {
  if (pumping_ || stopped_) return;  // the outer loop goes on until nothing may go
  pumping_ = true;
  // Cache affinity: among the first waiters, the one whose prompt an endpoint with room
  // caches most goes first (admission/admission.h).
  const admission::AffinityFn affinity = [this](admission::TicketId id,
                                                std::span<const std::string> with_room) {
    auto it = waiters_.find(id);
    return it == waiters_.end() || !it->second ? 0.0 : it->second->Affinity(with_room);
  };
  while (auto id = controller_.NextAdmissible(affinity)) {
    auto it = waiters_.find(*id);
    if (it == waiters_.end()) continue;
    auto w = std::move(it->second);
    waiters_.erase(it);
    if (w) w->Admitted();
  }
  pumping_ = false;
}

void AdmissionGate::ArmTimer() {
  if (stopped_) return;
  std::optional<Seconds> next = controller_.NextDeadline();
  if (!next || (armed_for_ && *armed_for_ <= *next)) return;
  armed_for_ = next;
  double wait_s = std::max(0.0, config_.RealSeconds(*next - clock_.Now()));
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(wait_s)));
  // The timer is a member: when the gate is destroyed the wait ends with operation_aborted
  // and the handler returns without touching it.
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) OnTimer();
  });
}

void AdmissionGate::OnTimer() {
  armed_for_.reset();
  if (stopped_) return;
  const Seconds now = clock_.Now();
  for (admission::TicketId id : controller_.Expired(now)) {
    auto it = waiters_.find(id);
    if (it == waiters_.end()) continue;
    auto w = std::move(it->second);
    waiters_.erase(it);
    if (!w) continue;
    // RetryAfterS of the pool the waiter was in: every pool's estimate is the same formula;
    // the waiter's pool is no longer known here, so the longest estimate is given.
    int retry = 1;
    for (const auto& pool : controller_.Pools())
      retry = std::max(retry, controller_.RetryAfterS(pool, now));
    w->Refused(Status(ErrorCode::kResourceExhausted,
                      fmt::format("The model's endpoints stayed at capacity for the longest "
                                  "queue wait ({} s); retry after {} s.",
                                  config_.admission.queue_timeout_s, retry)),
               retry);
  }
  ArmTimer();
}

}  // namespace kinference::gateway
