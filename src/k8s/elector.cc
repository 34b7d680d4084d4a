#include "k8s/elector.h"

#include <spdlog/spdlog.h>

#include <boost/json/serialize.hpp>

#include "k8s/resource.h"

namespace kinference::k8s {
namespace json = boost::json;

std::shared_ptr<LeaderElector> LeaderElector::Create(std::shared_ptr<RestClient> client,
                                                     LeaderElectionConfig config,
                                                     Callbacks callbacks) {
  return std::shared_ptr<LeaderElector>(
      new LeaderElector(std::move(client), std::move(config), std::move(callbacks)));
}

LeaderElector::LeaderElector(std::shared_ptr<RestClient> client, LeaderElectionConfig config,
                             Callbacks callbacks)
    : client_(std::move(client)),
      core_(std::move(config)),
      callbacks_(std::move(callbacks)),
      timer_(client_->executor()),
      rng_(static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) {}

bool LeaderElector::IsLeader() const { return !stopped_ && core_.IsLeader(clock_.Now()); }

void LeaderElector::Start() {
  if (!stopped_) return;
  stopped_ = false;
  spdlog::info("leader election: {} campaigning for lease {}/{}", core_.config().identity,
               core_.config().ns, core_.config().lease_name);
  Tick();
}

void LeaderElector::Schedule() {
  if (stopped_) return;
  double period = core_.config().retry_period_s;
  if (!core_.IsLeader(clock_.Now())) {
    std::uniform_real_distribution<double> u(0, 0.2);  // client-go JitterFactor 1.2
    period *= 1 + u(rng_);
  }
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(period)));
  timer_.async_wait([self = shared_from_this(), epoch = epoch_](boost::system::error_code ec) {
    if (ec || epoch != self->epoch_) return;
    self->Tick();
  });
}

void LeaderElector::UpdateLeading() {
  bool now_leading = !stopped_ && core_.IsLeader(clock_.Now());
  if (now_leading == leading_) return;
  leading_ = now_leading;
  if (leading_) {
    spdlog::info("leader election: {} is now the leader", core_.config().identity);
    if (callbacks_.on_started_leading) callbacks_.on_started_leading();
  } else {
    spdlog::warn("leader election: {} stopped leading", core_.config().identity);
    if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
  }
}

void LeaderElector::Tick() {
  UpdateLeading();  // a missed renew deadline ends leadership even while requests hang
  if (stopped_) return;
  if (in_flight_) return Schedule();
  in_flight_ = true;
  const auto& c = core_.config();
  client_->Call(
      "GET", ObjectPath(kLeases, c.ns, c.lease_name), "", "",
      [self = shared_from_this(), epoch = epoch_](Result<ApiResponse> r) {
        if (epoch != self->epoch_) return;
        if (!r.ok() || (!r->ok() && r->status != 404)) {
          spdlog::debug("leader election: read lease: {}",
                        r.ok() ? ApiErrorMessage(*r) : r.status().message());
          return self->Finish(false);
        }
        if (r->status == 404) return self->Attempt(nullptr);
        auto lease = ParseObject(*r);
        if (!lease.ok()) return self->Finish(false);
        self->last_lease_ = *lease;
        self->Attempt(&self->last_lease_);
      },
      c.renew_deadline_s / 2);
}

void LeaderElector::Attempt(const json::object* lease) {
  auto attempt =
      core_.Decide(lease, clock_.Now(), FormatMicroTime(std::chrono::system_clock::now()));
  const auto& c = core_.config();
  if (attempt.action == LeaderElection::Attempt::Action::kNone) return Finish(false);
  bool create = attempt.action == LeaderElection::Attempt::Action::kCreate;
  std::string target =
      create ? CollectionPath(kLeases, c.ns) : ObjectPath(kLeases, c.ns, c.lease_name);
  client_->Call(
      create ? "POST" : "PUT", target, json::serialize(attempt.lease), "application/json",
      [self = shared_from_this(), epoch = epoch_](Result<ApiResponse> r) {
        if (epoch != self->epoch_) return;
        if (r.ok() && r->ok()) {
          if (auto written = ParseObject(*r); written.ok()) self->last_lease_ = std::move(*written);
          self->core_.OnWriteSucceeded(self->clock_.Now());
          return self->Finish(true);
        }
        // 409 Conflict: another candidate wrote first; try again next period.
        spdlog::debug("leader election: write lease: {}",
                      r.ok() ? ApiErrorMessage(*r) : r.status().message());
        self->core_.OnWriteFailed();
        self->Finish(false);
      },
      c.renew_deadline_s / 2);
}

void LeaderElector::Finish(bool) {
  in_flight_ = false;
  UpdateLeading();
  Schedule();
}

void LeaderElector::Stop(std::function<void()> done) {
  if (stopped_) {
    if (done) done();
    return;
  }
  bool was_leading = leading_;
  stopped_ = true;
  ++epoch_;
  timer_.cancel();
  auto release = core_.Release(last_lease_, FormatMicroTime(std::chrono::system_clock::now()));
  auto finish = [self = shared_from_this(), was_leading, done = std::move(done)] {
    if (was_leading) {
      self->leading_ = false;
      spdlog::info("leader election: {} stopped leading (shutdown)", self->core_.config().identity);
      if (self->callbacks_.on_stopped_leading) self->callbacks_.on_stopped_leading();
    }
    if (done) done();
  };
  if (!release) return finish();
  const auto& c = core_.config();
  client_->Call(
      "PUT", ObjectPath(kLeases, c.ns, c.lease_name), json::serialize(*release), "application/json",
      [finish](Result<ApiResponse>) { finish(); }, c.renew_deadline_s / 2);
}

}  // namespace kinference::k8s
