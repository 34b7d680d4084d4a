// GatewayContext: the state every gateway component shares (config, clock, router,
// stats, endpoint table, executor), owned by Gateway and held by in-flight exchanges and
// the scraper through shared_ptr, so callbacks that outlive a Stop() stay valid.
//
// Two sources fill the endpoint table, the tenant set and the policy store through the
// same members: the config file at construction (file mode), and, with --kubernetes,
// gateway/kubernetes/source.h, which adds and removes endpoints while the gateway runs
// (AddEndpoint/RemoveEndpoint) and replaces `config.tenants`, `tenant_models` and the
// policy set. Components hold endpoint ids, never pointers or indices, across callbacks.
// Every component that knows the endpoint set learns of a change inside AddEndpoint /
// RemoveEndpoint: router, stats, admission gate, outlier detector, KV-event feeds
// (EndpointObserver); the scraper scrapes the endpoints there at each tick.
//
// Thread-safety: not thread-safe; lives on the gateway's single io_context thread, which
// is also the only thread that touches the (not thread-safe) router. The Kubernetes
// source's watches and the KV-event subscriber threads only post to that thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "gateway/admission_gate.h"
#include "gateway/config/config.h"
#include "gateway/config/policy_runtime.h"
#include "gateway/exchange/prompt_keys.h"
#include "gateway/stats/stats.h"
#include "gateway/upstream/provider.h"
#include "ledger/accounting_service.h"
#include "routing/outlier.h"
#include "routing/router.h"

namespace kinference::gateway {

// Health of a local endpoint (docs/reliability.md): passive, from its requests' results
// (routing/outlier.h: a connect failure, a reset or a 5xx ejects it at once for a growing
// time) and from scrapes that cannot connect (vLLM serves /metrics on its API port, so a
// refused /metrics connection is a refused inference connection). Any other scrape
// failure (timeout, error status, unparsable text) only marks the endpoint's metrics
// stale: the router then predicts from its own in-flight bookkeeping.

struct Endpoint {
  routing::EndpointInfo info;  // id = "<pool>/<index>" (file), "<pool>/<pod>" (--kubernetes)
  EndpointAddress address;
  int consecutive_failures = 0;  // failed scrapes in a row
  bool metrics_stale = false;    // the last scrape failed
  bool healthy = true;           // not ejected (local) / breaker closed (provider)
  bool scrape_in_flight = false;
  // Unique per AddEndpoint call (an id removed and added again gets a new one): a scrape
  // answering for an earlier incarnation of the id is dropped.
  uint64_t serial = 0;
  // The last successful /metrics scrape (queue depth, KV usage for policies); none yet.
  std::optional<routing::MetricsSnapshot> last_metrics;
  std::optional<Seconds> last_metrics_at;  // when last_metrics was scraped (model time)
  // Providers (gateway/upstream/provider.h): class "provider", id "provider/<name>", never scraped.
  std::shared_ptr<const ProviderConfig> provider;  // null: a local (vLLM) endpoint
  std::string api_key;  // the provider's or the pool's (may be empty); never logged
  std::optional<CircuitBreaker> breaker;
  const char* endpoint_class() const { return provider ? "provider" : "local"; }
};

// A request the gateway is serving, as seen by a drain (Exchange, exchange/exchange.h, implements
// it).
class InFlightRequest {
 public:
  virtual ~InFlightRequest() = default;
  // Ends the request with `status`; false if it had already finished.
  virtual bool Abort(const Status& status) = 0;
};

// Told when an endpoint joins or leaves the set at run time (--kubernetes).
class EndpointObserver {
 public:
  virtual ~EndpointObserver() = default;
  virtual void OnEndpointAdded(const Endpoint& ep) = 0;
  virtual void OnEndpointRemoved(const std::string& id) = 0;
};

// A provider endpoint: id, the provider's model as served, its API key and circuit breaker.
Endpoint MakeProviderEndpoint(std::string id, std::shared_ptr<const ProviderConfig> provider,
                              std::string api_key);

struct GatewayContext {
  // Throws ConfigError when config.strategy is not one of the router's strategies or
  // the policy files do not load.
  GatewayContext(GatewayConfig config, boost::asio::any_io_executor executor);

  GatewayConfig config;
  boost::asio::any_io_executor executor;
  RealClock clock;  // model time: RealClock(config.time_scale)
  routing::Router router;
  Stats stats;
  // Changes at run time (--kubernetes): hold ids, not pointers or indices, across
  // callbacks; Find/FindMutable results are valid until the next AddEndpoint/RemoveEndpoint.
  std::vector<Endpoint> endpoints;
  uint64_t next_endpoint_serial = 1;
  uint64_t next_request_id = 1;
  // Random per process: generated request ids stay unique across gateway replicas.
  uint64_t request_id_prefix = 0;
  // Random per process, secret: keys the prefix index's block hashes (routing::
  // ChainedBlockHashes) so that clients cannot craft prompts whose hashes collide.
  uint64_t prefix_hash_key = 0;
  // Requests in flight, for AbortInFlight (expired entries are pruned on insert).
  std::vector<std::weak_ptr<InFlightRequest>> in_flight;
  // InferencePolicy store, decision log, counters, taggers (exchange/policy_gate.h).
  PolicyRuntime policy;
  // Passive health of local endpoints (providers have their circuit breakers).
  routing::OutlierDetector outlier;
  // Admission control: per-endpoint in-flight limits and the pools' wait queues.
  AdmissionGate admission;
  // Models whose pool has kv_events: how their prompts become engine block keys
  // (exchange/prompt_keys.h), and the pool's configured block size (0: learnt).
  struct KvModel {
    std::shared_ptr<const PromptKeys> keys;
    int block_size = 0;
    std::string pool;
  };
  std::map<std::string, KvModel> kv_models;  // by served model name
  // The same for pools by name (file pools and --kubernetes pools' settings, config.h):
  // AddEndpoint adds an endpoint's model to kv_models from its pool's entry.
  std::map<std::string, KvModel> kv_pools;
  // Pool name -> its key (PoolConfig::api_key_env / api_key_file), read at start-up;
  // AddEndpoint sets it on the pool's local endpoints. Never logged.
  std::map<std::string, std::string> pool_api_keys;
  // Kubernetes mode: the models each tenant may use (InferenceTenant spec.access.models);
  // a tenant not listed may use every model.
  std::map<std::string, std::vector<std::string>> tenant_models;
  // Told of every endpoint added or removed after they registered (KvFeeds); expired
  // entries are skipped. Called on the io thread, inside AddEndpoint/RemoveEndpoint.
  std::vector<std::weak_ptr<EndpointObserver>> endpoint_observers;
  // Accounting (config.accounting given): usage ledger, limiter, usage queries, prices.
  // Null without the section. Started by Gateway::Start, stopped by Gateway::Stop after
  // the server (a drain's last records are submitted first).
  std::shared_ptr<ledger::AccountingService> accounting;
  // Kubernetes mode: limits from InferenceTenant spec.limits, by tenant; they take
  // precedence over the config file's accounting.limits (TenantLimitsFor).
  std::map<std::string, accounting::TenantLimits> tenant_limits;
  // This gateway process, "host:pid": the `gateway` field of its usage records, and the
  // prefix of its reservation ids in the shared limiter (unique across replicas).
  std::string instance;
  // Random per process: usage record ids (MakeRecordId of two draws).
  std::mt19937_64 record_rng;

  // Sets features.engine_block_keys/engine_block_size/prompt_tokens for `request` when its
  // model's pool follows KV events and the prompt tokenizes exactly; else leaves them.
  void AddEngineBlockKeys(const api::ParsedRequest& request,
                          routing::RequestFeatures& features) const;

  // Adds an endpoint and registers it everywhere the endpoint set is known: the router
  // (healthy), stats (healthy, metrics fresh), admission control (its pool's
  // max_in_flight: config.pools' entry of that name, else no limit; providers unlimited,
  // a queue of their own) and the observers (KV-event feeds); kv_models gets its model
  // when its pool follows KV events. Replaces an endpoint with the same id (removed
  // first). Pumps the admission queues (room may have appeared).
  void AddEndpoint(Endpoint ep);
  // Removes an endpoint from all of those and from passive health (outlier detector);
  // requests already sent to it finish (their admission/router bookkeeping for an unknown
  // id is ignored; for an id added again meanwhile, their completions count against the
  // new endpoint's in-flight number, floored at 0); queued requests whose candidates are
  // all gone wait for their deadline (429). No-op for an unknown id.
  void RemoveEndpoint(const std::string& id);
  // Whether `tenant` may use `model` (tenant_models).
  bool TenantMayUse(const std::string& tenant, const std::string& model) const;
  // The config file's pool entry named `pool` (file pool or --kubernetes settings); null.
  const PoolConfig* PoolSettings(const std::string& pool) const;

  const Endpoint* Find(const std::string& id) const;
  Endpoint* FindMutable(const std::string& id);
  // Every non-empty endpoint key (providers' and pools'), for common/redact.h.
  std::vector<std::string> ApiKeys() const;
  // Provider circuit breakers: an upstream result for endpoint `id` (no-op for local
  // endpoints), and closing breakers whose cool-down ended (half-open).
  void OnUpstreamResult(const std::string& id, bool ok);
  void RefreshBreakers();
  // Passive health: the result of a request to local endpoint `id`; ejects it (unhealthy
  // for the router, admission and /ready) on a failure the detector counts. Ejections
  // (and cooldowns) whose time is up end in RefreshBreakers.
  void OnRequestResult(const std::string& id, routing::RequestResult result);
  // Cooldown (routing/router.h): endpoint `id` answered 429, 503 or 529 asking for a wait
  // of `wait_real_s` real seconds (its Retry-After / retry-after-ms, api/retry_after.h,
  // at most 3600 s): the router skips it until then (model time: wait x time_scale), and
  // admission gives it no room meanwhile; counted in kinference_endpoint_cooldowns_total
  // when it starts one, kinference_endpoint_cooling_down 1 until it ends (RefreshBreakers).
  // A wait of 0 or less does nothing.
  void CoolDown(const std::string& id, double wait_real_s);
  // Seconds until the first of `ids` may take requests again: for each, the later of the
  // end of its ejection or open breaker and the end of its cooldown; the earliest of
  // those (1 when none; for Retry-After on a 503, or on the refusal of a request whose
  // endpoints are all cooling down). Real seconds, 1..3600.
  int RetryAfterUnhealthyS(const std::vector<routing::EndpointId>& ids) const;
  // Models with at least one healthy endpoint (readiness).
  std::vector<std::string> ServableModels() const;
  // Whether an endpoint (healthy or not) serves `model`.
  bool ServesModel(const std::string& model) const;
  // Ids of every endpoint serving `model`, in the order they were added (file: config order).
  std::vector<routing::EndpointId> EndpointsFor(const std::string& model) const;
  // Distinct models of the endpoints, in the order they were added.
  std::vector<std::string> Models() const;
  bool KnowsStrategy(const std::string& name) const;
  // The limits of `tenant` (InferenceTenant spec.limits, else accounting.limits: its own
  // entry, else the default); nullptr when it has none or accounting is off.
  const accounting::TenantLimits* TenantLimitsFor(const std::string& tenant) const;
  // A fresh usage record id (accounting::MakeRecordId).
  std::string NewRecordId();
};

}  // namespace kinference::gateway
