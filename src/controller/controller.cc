#include "controller/controller.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/json/serialize.hpp>

#include "crd/revisions.h"
#include "crd/status.h"
#include "http/server.h"
#include "k8s/lease.h"

namespace kinference::controller {
namespace json = boost::json;

namespace {
struct Watched {
  const char* key;
  k8s::ResourceType type;
  const char* label_selector;
};
// What the controller watches, in its namespace.
const Watched kWatched[] = {
    {"policies", k8s::kInferencePolicies, ""},
    {"providers", k8s::kInferenceProviders, ""},
    {"tenants", k8s::kInferenceTenants, ""},
    {"secrets", k8s::kSecrets, ""},
    {"configmaps", k8s::kConfigMaps, ""},
    {"pools", k8s::kInferencePools, ""},
    {"revisions", k8s::kControllerRevisions, crd::kPolicyUidLabel},
};
}  // namespace

Controller::Controller(boost::asio::io_context& io, std::shared_ptr<k8s::RestClient> client,
                       ControllerOptions options)
    : io_(io), client_(std::move(client)), options_(std::move(options)), timer_(io) {}

Controller::~Controller() {
  *alive_ = false;
  for (auto& [k, r] : reflectors_) r->Stop();
  if (server_) server_->Stop();
}

bool Controller::synced() const {
  for (const auto& [k, r] : reflectors_)
    if (!r->synced()) return false;
  return !reflectors_.empty();
}

bool Controller::leading() const { return elector_ && elector_->IsLeader(); }

Result<uint16_t> Controller::Start() {
  http::ServerOptions so;
  so.address = options_.listen_address;
  so.port = options_.listen_port;
  server_ = std::make_unique<http::Server>(io_, so);
  server_->Route("GET", "/healthz",
                 [](http::Request, auto w) { w->Send(200, "text/plain", "ok\n"); });
  server_->Route("GET", "/readyz", [this](http::Request, auto w) {
    bool ready = synced();
    w->Send(ready ? 200 : 503, "text/plain", ready ? "ok\n" : "caches not synced\n");
  });
  server_->Route("GET", "/metrics", [this](http::Request, auto w) {
    w->Send(200, "text/plain; version=0.0.4; charset=utf-8", Metrics());
  });
  auto port = server_->Start();
  if (!port.ok()) return port;
  for (const auto& w : kWatched) {
    k8s::ReflectorOptions ro;
    ro.type = w.type;
    ro.ns = options_.ns;
    ro.list_watch.label_selector = w.label_selector;
    auto alive = alive_;
    reflectors_[w.key] =
        k8s::Reflector::Create(client_, ro, [this, alive](const std::vector<k8s::Change>&) {
          if (*alive) Schedule(kReconcileDelayS);
        });
  }
  for (auto& [k, r] : reflectors_) r->Start();
  k8s::LeaderElectionConfig le;
  le.ns = options_.ns;
  le.lease_name = options_.lease_name;
  le.identity = options_.identity;
  le.lease_duration_s = options_.lease_duration_s;
  le.renew_deadline_s = options_.renew_deadline_s;
  le.retry_period_s = options_.retry_period_s;
  auto alive = alive_;
  elector_ = k8s::LeaderElector::Create(client_, le,
                                        {[this, alive] {
                                           if (*alive) Schedule(0);
                                         },
                                         [] {}});
  elector_->Start();
  Schedule(kResyncS);
  return port;
}

void Controller::Stop(std::function<void()> done) {
  if (stopped_) {
    if (done) done();
    return;
  }
  stopped_ = true;
  timer_.cancel();
  for (auto& [k, r] : reflectors_) r->Stop();
  auto finish = [this, alive = alive_, done = std::move(done)] {
    if (*alive && server_) server_->Stop();
    if (done) done();
  };
  if (elector_) return elector_->Stop(finish);
  finish();
}

void Controller::Schedule(double delay_s) {
  if (stopped_) return;
  if (scheduled_) {
    // Bring a far resync forward; never push a near pass back.
    if (timer_.expiry() - std::chrono::steady_clock::now() <=
        std::chrono::duration<double>(delay_s))
      return;
    timer_.cancel();
  }
  scheduled_ = true;
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(delay_s)));
  timer_.async_wait([this, alive = alive_](boost::system::error_code ec) {
    if (ec || !*alive) return;
    scheduled_ = false;
    ReconcileNow();
    Schedule(kResyncS);
  });
}

void Controller::ReconcileNow() {
  if (stopped_ || !leading() || !synced()) return;
  Snapshot snap;
  snap.policies = &reflectors_["policies"]->cache();
  snap.providers = &reflectors_["providers"]->cache();
  snap.tenants = &reflectors_["tenants"]->cache();
  snap.secrets = &reflectors_["secrets"]->cache();
  snap.config_maps = &reflectors_["configmaps"]->cache();
  snap.pools = &reflectors_["pools"]->cache();
  snap.revisions = &reflectors_["revisions"]->cache();
  Apply(Reconcile(snap, k8s::FormatTime(std::chrono::system_clock::now()),
                  options_.revision_history_limit));
}

void Controller::CountWrite(const std::string& what, bool ok) {
  ++writes_[fmt::format("{},{}", what, ok ? "ok" : "error")];
}

void Controller::Apply(Actions actions) {
  auto call = [this](std::string method, std::string target, std::string body,
                     std::string_view content_type, std::string what, std::string log) {
    if (!in_flight_.insert(target + method).second) return;
    client_->Call(
        method, target, std::move(body), content_type,
        [this, alive = alive_, key = target + method, what, log](Result<k8s::ApiResponse> r) {
          if (!*alive) return;
          in_flight_.erase(key);
          bool ok = r.ok() && (r->ok() || (what == "revision_delete" && r->status == 404));
          CountWrite(what, ok);
          if (ok) {
            spdlog::info("controller: {}", log);
            // Changes that arrived while this write was in flight were skipped.
            Schedule(kReconcileDelayS);
          } else {
            spdlog::warn("controller: {} failed: {}", log,
                         r.ok() ? k8s::ApiErrorMessage(*r) : r.status().message());
          }
        });
  };
  for (auto& c : actions.creates) {
    std::string ns(k8s::NamespaceOf(c.revision));
    std::string name(k8s::NameOf(c.revision));
    call("POST", k8s::CollectionPath(k8s::kControllerRevisions, ns), json::serialize(c.revision),
         "application/json", "revision_create",
         fmt::format("revision {} ({}) created", name, crd::RevisionNumber(c.revision)));
  }
  for (auto& r : actions.renumbers) {
    call("PATCH", k8s::ObjectPath(k8s::kControllerRevisions, r.ns, r.name),
         json::serialize(json::object{{"revision", r.revision}}), k8s::kMergePatch,
         "revision_renumber", fmt::format("revision {} renumbered to {}", r.name, r.revision));
  }
  for (auto& d : actions.deletes) {
    call("DELETE", k8s::ObjectPath(k8s::kControllerRevisions, d.ns, d.name), "", "",
         "revision_delete",
         fmt::format("revision {} deleted (history limit or owner gone)", d.name));
  }
  for (auto& s : actions.statuses) {
    std::string accepted;
    for (const auto& c : s.status.at("conditions").as_array()) {
      const auto& o = c.as_object();
      accepted += fmt::format(" {}={}", k8s::StringAt(o, {"type"}), k8s::StringAt(o, {"status"}));
    }
    call("PATCH", k8s::StatusPath(s.type, s.ns, s.name), crd::StatusPatch(s.status),
         k8s::kMergePatch, "status",
         fmt::format("{} {}/{} status:{}", s.type.kind, s.ns, s.name, accepted));
  }
}

std::string Controller::Metrics() const {
  std::string out =
      "# HELP kinference_controller_leader 1 while this replica holds the leader lease.\n"
      "# TYPE kinference_controller_leader gauge\n";
  out += fmt::format("kinference_controller_leader {}\n", leading() ? 1 : 0);
  out +=
      "# HELP kinference_controller_synced 1 once every watched collection has been listed.\n"
      "# TYPE kinference_controller_synced gauge\n";
  out += fmt::format("kinference_controller_synced {}\n", synced() ? 1 : 0);
  out +=
      "# HELP kinference_controller_writes_total Writes to the API server by kind and result.\n"
      "# TYPE kinference_controller_writes_total counter\n";
  for (const auto& [k, n] : writes_) {
    size_t comma = k.find(',');
    out += fmt::format("kinference_controller_writes_total{{kind=\"{}\",result=\"{}\"}} {}\n",
                       k.substr(0, comma), k.substr(comma + 1), n);
  }
  return out;
}

}  // namespace kinference::controller
