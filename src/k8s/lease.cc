#include "k8s/lease.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <boost/json/serialize.hpp>
#include <cmath>

#include "k8s/resource.h"

namespace kinference::k8s {
namespace json = boost::json;

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  auto secs = std::chrono::floor<std::chrono::seconds>(t);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z", secs, micros);
}

std::string FormatTime(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", std::chrono::floor<std::chrono::seconds>(t));
}

namespace {
int64_t IntOf(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) return 0;
  return v->to_number<int64_t>();
}
}  // namespace

LeaderElection::Attempt LeaderElection::Decide(const json::object* lease, Seconds now,
                                               const std::string& wall_now) {
  Attempt a;
  pending_acquire_ = false;
  const auto duration = static_cast<int64_t>(std::ceil(config_.lease_duration_s));
  if (lease == nullptr) {
    observed_.clear();
    a.action = Attempt::Action::kCreate;
    a.lease = json::object{
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", json::object{{"name", config_.lease_name}, {"namespace", config_.ns}}},
        {"spec", json::object{{"holderIdentity", config_.identity},
                              {"leaseDurationSeconds", duration},
                              {"acquireTime", wall_now},
                              {"renewTime", wall_now},
                              {"leaseTransitions", 0}}}};
    pending_acquire_ = true;
    return a;
  }
  const json::object* spec = ObjectAt(*lease, {"spec"});
  static const json::object kEmpty;
  if (spec == nullptr) spec = &kEmpty;
  std::string record = json::serialize(*spec);
  if (record != observed_) {
    observed_ = record;
    observed_at_ = now;
    observed_duration_s_ = static_cast<double>(IntOf(*spec, "leaseDurationSeconds"));
  }
  std::string holder(StringAt(*spec, {"holderIdentity"}));
  if (!holder.empty() && holder != config_.identity && observed_at_ + observed_duration_s_ > now) {
    holding_ = false;
    a.action = Attempt::Action::kNone;
    a.holder = holder;
    return a;
  }
  json::object updated = *lease;
  json::object& s = updated["spec"].emplace_object();
  s = *spec;
  s["holderIdentity"] = config_.identity;
  s["leaseDurationSeconds"] = duration;
  s["renewTime"] = wall_now;
  if (holder != config_.identity) {
    s["acquireTime"] = wall_now;
    s["leaseTransitions"] = IntOf(*spec, "leaseTransitions") + 1;
    pending_acquire_ = true;
  }
  a.action = Attempt::Action::kUpdate;
  a.lease = std::move(updated);
  return a;
}

void LeaderElection::OnWriteSucceeded(Seconds now) {
  holding_ = true;
  renewed_at_ = now;
  pending_acquire_ = false;
}

void LeaderElection::OnWriteFailed() { pending_acquire_ = false; }

std::optional<json::object> LeaderElection::Release(const json::object& lease,
                                                    const std::string& wall_now) const {
  const json::object* spec = ObjectAt(lease, {"spec"});
  if (!holding_ || spec == nullptr || StringAt(*spec, {"holderIdentity"}) != config_.identity)
    return std::nullopt;
  json::object released = lease;
  json::object& s = released["spec"].as_object();
  s["holderIdentity"] = "";
  s["leaseDurationSeconds"] = 1;
  s["renewTime"] = wall_now;
  return released;
}

bool LeaderElection::IsLeader(Seconds now) const {
  return holding_ && now - renewed_at_ < config_.renew_deadline_s;
}

}  // namespace kinference::k8s
