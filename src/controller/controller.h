// Controller: the `kinference controller` shell. Watches (reflectors) the kinference.io
// objects of one namespace and what they reference (Secrets, ConfigMaps, InferencePools,
// the policies' ControllerRevisions), computes their status and the policy revision
// history (reconcile.h), and, only while it holds the leader Lease (k8s/elector.h),
// writes them: status through the /status subresource (merge patch), revisions as
// ControllerRevision objects.
//
// Replicas run active-passive: every replica keeps its caches warm; the leader writes.
// When the leader dies its lease expires (lease_duration_s) and another replica takes
// over and reconciles everything at once. Reconciling is level-based: any change (or
// becoming leader) schedules one pass over every object, coalesced over
// kReconcileDelayS, and objects already in the wanted state cause no writes. A failed
// write is retried by the next pass (every kResyncS at the latest).
//
// Health (for probes): GET /healthz (200 while running), GET /readyz (200 once every
// reflector has listed), GET /metrics (Prometheus text: leader gauge, writes by kind and
// result). Served on ControllerOptions::listen.
//
// Thread-safety: not thread-safe; everything runs on the io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "controller/reconcile.h"
#include "k8s/elector.h"
#include "k8s/reflector.h"
#include "k8s/rest_client.h"

namespace kinference::http {
class Server;
}

namespace kinference::controller {

// Our choices: changes that arrive together (a kubectl apply of several objects) are one
// pass; a full pass at least every 30 s repairs anything a failed write left behind.
inline constexpr double kReconcileDelayS = 0.05;
inline constexpr double kResyncS = 30;

struct ControllerOptions {
  std::string ns;
  std::string identity;
  std::string lease_name = "kinference-controller";
  double lease_duration_s = 15;
  double renew_deadline_s = 10;
  double retry_period_s = 2;
  int revision_history_limit = 10;
  std::string listen_address = "127.0.0.1";
  uint16_t listen_port = 0;
};

class Controller {
 public:
  Controller(boost::asio::io_context& io, std::shared_ptr<k8s::RestClient> client,
             ControllerOptions options);
  ~Controller();
  // Starts the health server, the reflectors and the election. Returns the bound port.
  Result<uint16_t> Start();
  // Releases the lease (if held) and stops; `done` runs afterwards on the io thread.
  void Stop(std::function<void()> done = {});

  bool synced() const;
  bool leading() const;

 private:
  void Schedule(double delay_s);
  void ReconcileNow();
  void Apply(Actions actions);
  void CountWrite(const std::string& what, bool ok);
  std::string Metrics() const;

  boost::asio::io_context& io_;
  std::shared_ptr<k8s::RestClient> client_;
  ControllerOptions options_;
  std::map<std::string, std::shared_ptr<k8s::Reflector>> reflectors_;  // by kind
  std::shared_ptr<k8s::LeaderElector> elector_;
  std::unique_ptr<http::Server> server_;
  boost::asio::steady_timer timer_;
  bool scheduled_ = false;
  bool stopped_ = false;
  // Writes in flight, by target (status path or revision name), so that a pass does not
  // repeat a write the previous pass started.
  std::set<std::string> in_flight_;
  std::map<std::string, uint64_t> writes_;  // "kind,result" -> count
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace kinference::controller
