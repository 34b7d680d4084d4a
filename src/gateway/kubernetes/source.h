// KubernetesSource: `kinference gateway --kubernetes`. Lists and watches (k8s/reflector.h)
// InferencePools, Pods, InferencePolicies, InferenceProviders, InferenceTenants, Secrets
// and ConfigMaps of one namespace and applies every change, live, to what the file mode
// fills from the config file: the endpoint registry and router (GatewayContext::
// AddEndpoint / RemoveEndpoint), the provider endpoints, the tenant set
// (GatewayContext::config.tenants, tenant_models) and the policy store (PolicyStore::Set).
// Pools and providers of the config file, if any, stay; the file's tenant settings and
// keys stay and the cluster's tenants' keys are added to them. A file pool entry without
// endpoints is the settings of the InferencePool of that name (config.h, ConfigMode).
//
// What is served is crd::ClusterState's snapshot (crd/cluster_state.h): ready Pods of each
// InferencePool at podIP:targetPort (endpoint id "<pool>/<pod>"), providers and tenants
// with their Secrets resolved, policies through the file loader; an object that fails
// validation keeps serving its last accepted version. A Pod's served model is read once
// from its GET /v1/models (the first entry; retried every second until it answers); the
// Pod becomes an endpoint only then. Provider endpoints are "provider/<name>" (or
// "provider/<name>/<servesModel>" for a provider with several models). An InferenceTenant's
// spec.access.pools/providers becomes a policy "tenant-access.<tenant>" (highest priority,
// enforce) that keeps only those candidates for that tenant; spec.access.models is checked
// before routing (GatewayContext::TenantMayUse: 403); spec.limits replaces the config's
// accounting.limits for that tenant (GatewayContext::tenant_limits; enforced only with an
// accounting section, docs/accounting.md).
//
// Changes are applied within one io_context turn of the watch event that carries them
// (several events arriving together are one update), so a Pod turning not-Ready leaves the
// candidate set for new requests at once; requests already sent to it finish.
// While the API server is unreachable the last state stays in use (the reflectors retry
// with backoff and relist when they come back).
//
// Endpoints come and go only through GatewayContext::AddEndpoint/RemoveEndpoint, which
// register and unregister them with the router, stats, admission control (the pool's
// max_in_flight from the config file's entry of the InferencePool's name), passive health
// and the KV-event feeds (when that entry has kv_events); the scraper follows the table.
//
// Thread-safety: not thread-safe; create, Start and Stop on the gateway's io_context
// thread. The RestClient runs on that io_context too (cli.cc gives it the executor), so
// watch events, the /v1/models answers, Apply and every endpoint change run on that one
// thread: nothing here is shared with another thread.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "crd/cluster_state.h"
#include "gateway/context.h"
#include "k8s/reflector.h"
#include "k8s/rest_client.h"

namespace kinference::gateway {

// Priority of the policies made from InferenceTenant access lists: before every other.
inline constexpr int64_t kTenantAccessPriority = INT64_MAX;
// Real seconds between /v1/models attempts for a Pod that does not answer yet (our choice:
// a starting vLLM answers within seconds of Ready; one request a second per Pod is nothing).
inline constexpr double kModelDiscoveryRetryS = 1;

class KubernetesSource : public std::enable_shared_from_this<KubernetesSource> {
 public:
  KubernetesSource(std::shared_ptr<GatewayContext> ctx, std::shared_ptr<k8s::RestClient> client,
                   std::string ns);
  void Start();
  void Stop();
  // Every reflector has listed once.
  bool synced() const;

 private:
  void Schedule();
  void Apply();
  void ApplyPools(const crd::ClusterSnapshot& snap);
  void ApplyProviders(const crd::ClusterSnapshot& snap);
  void ApplyTenants(const crd::ClusterSnapshot& snap);
  void ApplyPolicies(const crd::ClusterSnapshot& snap);
  void DiscoverModel(const std::string& address, const std::string& host, uint16_t port);

  std::shared_ptr<GatewayContext> ctx_;
  std::shared_ptr<k8s::RestClient> client_;
  std::string ns_;
  std::map<std::string, std::shared_ptr<k8s::Reflector>> reflectors_;
  crd::ClusterState state_;
  std::map<std::string, std::string> models_;  // "ip:port" -> served model
  std::set<std::string> discovering_;          // "ip:port" with a /v1/models call or retry pending
  std::set<std::string> wanted_;               // "ip:port" of ready pods now
  std::set<std::string> pod_endpoints_;        // ids this source added
  std::map<std::string, std::string> provider_fingerprints_;  // id this source added -> config
  TenantsConfig file_tenants_;                                // the config file's, kept
  std::string policies_fingerprint_;
  std::string tenants_fingerprint_;
  boost::asio::steady_timer sync_timer_;  // polls synced() before the first Apply
  bool logged_synced_ = false;
  bool scheduled_ = false;
  bool stopped_ = true;
};

}  // namespace kinference::gateway
