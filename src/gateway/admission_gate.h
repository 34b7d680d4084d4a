// AdmissionGate: admission control (admission/admission.h) wired to the gateway. It owns
// the pure AdmissionController, the requests waiting in its queues (it holds them: nothing
// else does while they wait) and the timer that refuses waiters whose deadline passed.
//
// Promises:
//  - every pool endpoint is registered with its pool's max_in_flight (a number, or
//    derived from its scrapes: admission::kDerive), providers without a limit, and
//    removed when the endpoint leaves: GatewayContext::AddEndpoint/RemoveEndpoint do it
//    (context.h), at start and for endpoints --kubernetes adds and removes later;
//  - Enqueue either queues a request (its Admitted() is called once room appears, in the
//    controller's order: priority, then the tenant with fewest requests in flight, then
//    arrival) or refuses it; a queued request is refused later (Refused(), with a
//    Retry-After in seconds) when its deadline passes or a higher-priority arrival evicts
//    it from a full queue;
//  - Pump admits waiters while one has a candidate with room; it is not re-entered (an
//    Admitted() that finishes a request at once does not recurse);
//  - memory: at most admission.max_queue waiters per pool, whatever the offered load.
//
// Thread-safety: not thread-safe; the gateway's io_context thread only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "admission/admission.h"
#include "common/clock.h"
#include "common/status.h"
#include "gateway/config/config.h"

namespace kinference::gateway {

// A request waiting for admission (Exchange implements it).
class AdmissionWaiter {
 public:
  virtual ~AdmissionWaiter() = default;
  // Room appeared: the request leaves the queue and tries again now.
  virtual void Admitted() = 0;
  // Refused while queued: answer `status` (429) with Retry-After `retry_after_s`.
  virtual void Refused(const Status& status, int retry_after_s) = 0;
  // Cache affinity (admission/admission.h): the expected prefix-cache hit, in tokens, of
  // this request on the best of `with_room`; 0 when unknown.
  virtual double Affinity(std::span<const std::string> with_room) const = 0;
};

class AdmissionGate {
 public:
  AdmissionGate(const GatewayConfig& config, boost::asio::any_io_executor executor,
                const Clock& clock);
  ~AdmissionGate();

  admission::AdmissionController& controller() { return controller_; }
  const admission::AdmissionController& controller() const { return controller_; }

  struct Refusal {
    Status status;
    int retry_after_s = 1;
  };
  // Queues a request none of whose `candidates` (healthy, in the policies' set) has room.
  // Returns its ticket, or none with `refusal` set (the queue is full of requests of equal
  // or higher priority): answer it now. May refuse another waiter (evicted) first.
  std::optional<admission::TicketId> Enqueue(std::shared_ptr<AdmissionWaiter> waiter,
                                             const std::string& tenant, int priority,
                                             std::vector<std::string> candidates, Refusal& refusal);
  // The request left (client gone, aborted): its ticket leaves the queue.
  void Cancel(admission::TicketId ticket);
  // Admits waiters while one may go (call after a slot was freed or an endpoint came back).
  void Pump();
  // Stops the deadline timer and drops the waiters (gateway stop).
  void Stop();

  // The refusal for a request of `pool` that cannot wait (status 429 + Retry-After).
  Refusal OverloadRefusal(const std::string& pool, const std::string& why);

 private:
  void ArmTimer();
  void OnTimer();

  const GatewayConfig& config_;
  const Clock& clock_;
  admission::AdmissionController controller_;
  std::map<admission::TicketId, std::shared_ptr<AdmissionWaiter>> waiters_;
  admission::TicketId next_ticket_ = 1;
  boost::asio::steady_timer timer_;
  std::optional<Seconds> armed_for_;  // the deadline the timer waits for
  bool pumping_ = false;
  bool stopped_ = false;
};

}  // namespace kinference::gateway
