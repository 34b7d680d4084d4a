// LeaderElection: the pure decisions of leader election over a coordination.k8s.io/v1
// Lease, with client-go's semantics (k8s.io/client-go/tools/leaderelection):
//
// - Every retry_period_s a candidate reads the Lease and decides (Decide):
//   absent -> create it holding it; held by someone else whose record was last seen to
//   change less than leaseDurationSeconds ago -> wait; otherwise (free, expired, or ours)
//   -> update it with our identity and renewTime, bumping leaseTransitions when the holder
//   changes (acquireTime = now). The update carries the read metadata.resourceVersion, so
//   two candidates racing for an expired lease cannot both win: the loser gets 409
//   Conflict (OnWriteFailed) and tries again next period.
// - Expiry is judged by OUR monotonic clock from when we last saw the record change
//   ("observedTime"), never by comparing renewTime with our wall clock: clocks of
//   different nodes disagree.
// - The leader renews every retry_period_s; if no renewal succeeded for renew_deadline_s
//   it stops leading (IsLeader false) before others may take over (lease duration >
//   renew deadline), so two leaders never write at once.
// - Release (on shutdown): holderIdentity "" and leaseDurationSeconds 1, so another
//   candidate takes over at its next attempt rather than after the lease duration.
// Defaults are client-go's documented ones: lease 15 s, renew deadline 10 s, retry 2 s.
//
// Times: `now` is monotonic seconds (injected clock); `wall_now` is the MicroTime text
// written into acquireTime/renewTime (RFC 3339 with microseconds, FormatMicroTime).
//
// Thread-safety: not thread-safe; one owner.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"

namespace kinference::k8s {

struct LeaderElectionConfig {
  std::string ns;
  std::string lease_name;
  std::string identity;  // unique per candidate (pod name + random suffix)
  double lease_duration_s = 15;
  double renew_deadline_s = 10;
  double retry_period_s = 2;
};

// "2006-01-02T15:04:05.000000Z" (metav1.MicroTime) and "2006-01-02T15:04:05Z" (metav1.Time).
std::string FormatMicroTime(std::chrono::system_clock::time_point t);
std::string FormatTime(std::chrono::system_clock::time_point t);

class LeaderElection {
 public:
  explicit LeaderElection(LeaderElectionConfig config) : config_(std::move(config)) {}

  struct Attempt {
    enum class Action { kNone, kCreate, kUpdate };
    Action action = Action::kNone;
    boost::json::object lease;  // the body to POST (kCreate) or PUT (kUpdate)
    std::string holder;         // kNone: who holds it
  };
  // `lease`: the Lease as read, or null when it does not exist (404).
  Attempt Decide(const boost::json::object* lease, Seconds now, const std::string& wall_now);
  // The write of the last Attempt succeeded at `now` (we hold the lease), or failed.
  void OnWriteSucceeded(Seconds now);
  void OnWriteFailed();
  // The body that releases a lease we hold (`lease` as last written or read); none when
  // we do not hold it.
  std::optional<boost::json::object> Release(const boost::json::object& lease,
                                             const std::string& wall_now) const;

  // We hold the lease and renewed it within renew_deadline_s of `now`.
  bool IsLeader(Seconds now) const;
  const LeaderElectionConfig& config() const { return config_; }

 private:
  LeaderElectionConfig config_;
  std::string observed_;         // the last record seen (serialized spec)
  Seconds observed_at_ = -1e18;  // when it last changed, by our clock
  double observed_duration_s_ = 0;
  bool holding_ = false;
  Seconds renewed_at_ = -1e18;
  bool pending_acquire_ = false;  // the attempt in flight takes it over
};

}  // namespace kinference::k8s
