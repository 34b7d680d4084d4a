// LeaderElector: runs leader election over a coordination.k8s.io/v1 Lease (the I/O shell
// around LeaderElection, lease.h, which holds the semantics). Every retry period (a
// non-leader's jittered by up to 20%, client-go's JitterFactor 1.2) it reads the Lease
// and creates, renews or takes it over; each request times out after renew_deadline_s / 2
// so that a hung API server cannot keep a stale leader leading.
//
// on_started_leading runs when this process becomes leader; on_stopped_leading when it
// stops (a renewal missed the renew deadline, the lease was taken, or Stop). Between the
// two IsLeader() is true; callers check it before every write that only the leader may
// make.
//
// Thread-safety: not thread-safe; create, Start, Stop and call IsLeader on the
// RestClient's io_context thread, where the callbacks run too.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <random>

#include "common/clock.h"
#include "k8s/lease.h"
#include "k8s/rest_client.h"

namespace kinference::k8s {

class LeaderElector : public std::enable_shared_from_this<LeaderElector> {
 public:
  struct Callbacks {
    std::function<void()> on_started_leading;
    std::function<void()> on_stopped_leading;
  };
  static std::shared_ptr<LeaderElector> Create(std::shared_ptr<RestClient> client,
                                               LeaderElectionConfig config, Callbacks callbacks);

  void Start();
  // Stops campaigning; a leader releases the lease first (best effort) and then calls
  // on_stopped_leading. `done` runs once that is over (at once when not leading).
  void Stop(std::function<void()> done = {});
  bool IsLeader() const;

 private:
  LeaderElector(std::shared_ptr<RestClient> client, LeaderElectionConfig config,
                Callbacks callbacks);
  void Tick();
  void Schedule();
  void Attempt(const boost::json::object* lease);
  void Finish(bool wrote);
  void UpdateLeading();

  std::shared_ptr<RestClient> client_;
  LeaderElection core_;
  Callbacks callbacks_;
  RealClock clock_;
  boost::asio::steady_timer timer_;
  std::mt19937_64 rng_;
  boost::json::object last_lease_;  // as last read or written
  bool leading_ = false;            // callbacks' view
  bool stopped_ = true;
  bool in_flight_ = false;
  uint64_t epoch_ = 0;
};

}  // namespace kinference::k8s
