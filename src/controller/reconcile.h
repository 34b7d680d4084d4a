// Reconcile: what the controller wants the cluster to look like, computed from its caches
// alone (pure; the controller shell, controller.h, applies the result when it leads).
//
// For every kinference.io object in the caches:
// - InferencePolicy: Accepted from the policy loader (crd::PolicyFromObject, the gateway's
//   own parser); ResolvedRefs checks that constraint selectors name existing
//   InferencePools and InferenceProviders. An accepted spec gets its revision
//   (crd::PlanRevisions); status.currentRevision names it.
// - InferenceProvider: Accepted from crd::ProviderFromObject; ResolvedRefs: the API key
//   Secret and key, and the CA bundle Secret/ConfigMap and key, exist.
// - InferenceTenant: Accepted from crd::TenantFromObject; ResolvedRefs: every API key
//   Secret (and key) exists and holds a value; status.apiKeys counts the keys found.
// A status is only proposed when it differs from the object's current one
// (crd::StatusUnchanged), so a steady cluster sees no writes.
//
// Revisions of a policy that is not accepted are left alone (its last accepted revision
// stays current in history); revisions whose owner policy no longer exists (the policy
// uid is in no cache entry) are deleted by the controller itself, so history does not
// outlive its policy where no garbage collector runs.
//
// Thread-safety: pure function over immutable caches.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "k8s/cache.h"
#include "k8s/resource.h"

namespace kinference::controller {

struct Snapshot {
  const k8s::ObjectCache* policies = nullptr;
  const k8s::ObjectCache* providers = nullptr;
  const k8s::ObjectCache* tenants = nullptr;
  const k8s::ObjectCache* secrets = nullptr;
  const k8s::ObjectCache* config_maps = nullptr;
  const k8s::ObjectCache* pools = nullptr;
  const k8s::ObjectCache* revisions = nullptr;  // ControllerRevisions with the policy-uid label
};

struct StatusUpdate {
  k8s::ResourceType type;
  std::string ns;
  std::string name;
  std::string resource_version;  // of the object the status was computed from
  boost::json::object status;
};

struct RevisionCreate {
  boost::json::object revision;
};
struct RevisionRenumber {
  std::string ns;
  std::string name;
  int64_t revision = 0;
};
struct RevisionDelete {
  std::string ns;
  std::string name;
};

struct Actions {
  std::vector<StatusUpdate> statuses;
  std::vector<RevisionCreate> creates;
  std::vector<RevisionRenumber> renumbers;
  std::vector<RevisionDelete> deletes;
};

// `now`: RFC 3339 time for new lastTransitionTimes.
Actions Reconcile(const Snapshot& snapshot, const std::string& now, int revision_history_limit);

}  // namespace kinference::controller
