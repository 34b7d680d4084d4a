// ClusterState: what a gateway in Kubernetes mode serves, computed from its reflectors'
// caches (pure; the gateway's Kubernetes source applies it to the same endpoint registry,
// provider set, tenant set and policy store that the file mode fills).
//
// - Pools: every InferencePool and the endpoints of its Pods: selected by
//   spec.selector.matchLabels in the pool's namespace, ready (crd::PodReady), at
//   status.podIP:spec.targetPorts[0].number. Endpoint ids are "<pool>/<pod>".
// - Providers: InferenceProviders with their API key (from the referenced Secret) and CA
//   bundle (Secret or ConfigMap) resolved.
// - Tenants: InferenceTenants with the SHA-256 of every API key found in the referenced
//   Secrets; the keys themselves are never kept. A key listed by two tenants identifies
//   neither (it is dropped from both, with a problem line): ambiguity must not pick one.
// - Policies: InferencePolicies through the policy loader (crd::PolicyFromObject).
//
// Last accepted version: an object (provider, tenant, policy, pool) whose current version
// fails to read or whose references cannot be resolved keeps serving its last accepted
// version; an object never accepted is left out. Every Update reads every object again, so
// a changed Secret (a rotated key) takes effect at once. Deleting the object drops it. Problems
// are reported once per object version (NewProblems), for the log.
//
// Thread-safety: not thread-safe; one owner.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "crd/resources.h"
#include "k8s/cache.h"
#include "policy/policy.h"

namespace kinference::crd {

struct PodEndpoint {
  std::string id;   // "<pool>/<pod>", or "<pool>/<pod>:<port>" when the pool has several ports
  std::string pod;  // metadata.name
  std::string ip;
  uint16_t port = 0;
};

struct PoolView {
  PoolSpec spec;
  std::vector<PodEndpoint> endpoints;  // ready pods, by pod name
};

struct ResolvedProvider {
  ProviderSpec spec;
  std::string api_key;  // never logged
  std::string ca_pem;   // empty: system trust store
};

using Sha256 = std::array<unsigned char, 32>;

struct ResolvedTenant {
  TenantSpec spec;
  std::vector<Sha256> key_hashes;
};

struct ClusterSnapshot {
  std::map<std::string, PoolView> pools;    // by pool name
  std::vector<ResolvedProvider> providers;  // by name
  std::vector<ResolvedTenant> tenants;      // by name
  std::vector<policy::Policy> policies;     // evaluation order (policy::SortPolicies)
  // "ns/name@resourceVersion ..." of the policies served: equal strings, equal policies.
  std::string policies_version;
};

struct ClusterCaches {
  const k8s::ObjectCache* pools = nullptr;
  const k8s::ObjectCache* pods = nullptr;
  const k8s::ObjectCache* policies = nullptr;
  const k8s::ObjectCache* providers = nullptr;
  const k8s::ObjectCache* tenants = nullptr;
  const k8s::ObjectCache* secrets = nullptr;
  const k8s::ObjectCache* config_maps = nullptr;
};

class ClusterState {
 public:
  ClusterSnapshot Update(const ClusterCaches& caches);
  // Problems found by the last Update that were not reported before ("InferenceProvider
  // ns/openai: spec.apiKeySecretRef.name: Secret 'x' not found (serving its last accepted
  // version)").
  std::vector<std::string> TakeProblems() { return std::move(problems_); }

 private:
  template <typename T>
  struct Kept {
    std::string resource_version;  // of the accepted version
    T value;
  };
  void Problem(const std::string& kind, const k8s::ObjectPtr& obj, const std::string& message,
               bool kept);

  std::map<std::string, Kept<PoolSpec>> pools_;
  std::map<std::string, Kept<ResolvedProvider>> providers_;
  std::map<std::string, Kept<ResolvedTenant>> tenants_;
  std::map<std::string, Kept<policy::Policy>> policies_;
  std::map<std::string, std::string> reported_;  // key -> "rv:message" last reported
  std::vector<std::string> problems_;
};

Sha256 Sha256Of(std::string_view data);

}  // namespace kinference::crd
