#include "gateway/context.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cmath>
#include <random>

namespace kinference::gateway {

namespace {
routing::RouterConfig MakeRouterConfig(const GatewayConfig& c) {
  routing::RouterConfig rc;
  rc.block_chars = c.block_chars;
  rc.default_strategy = c.strategy;
  // A seed per process unless configured: replicas must not break ties alike.
  std::random_device rd;
  const uint64_t drawn = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  rc.seed = EffectiveRouterSeed(c, drawn);
  spdlog::info("router tie-break seed {}{}", rc.seed, c.router_seed ? " (configured)" : "");
  return rc;
}
}  // namespace

GatewayContext::GatewayContext(GatewayConfig cfg, boost::asio::any_io_executor ex)
    : config(std::move(cfg)),
      executor(std::move(ex)),
      clock(config.time_scale),
      router(MakeRouterConfig(config)),
      policy(config, executor),
      admission(config, executor, clock) {
  stats.SetPolicyGeneration(policy.store.Current()->generation);
  {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    instance = std::string(host[0] ? host : "gateway") + ":" + std::to_string(getpid());
    std::random_device rd;
    record_rng.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
  }
  if (config.accounting.enabled) {
    // A shared concurrency slot outlives a replica that died holding it by the longest a
    // request can take: its upstream timeout plus the drain grace (real seconds).
    const double lease_s = config.RealSeconds(config.request_timeout_s) + config.drain_timeout_s;
    accounting = std::make_shared<ledger::AccountingService>(
        config.accounting, lease_s,
        [ex = executor](std::function<void()> f) { boost::asio::post(ex, std::move(f)); });
  }
  request_id_prefix =
      (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  prefix_hash_key = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  if (!KnowsStrategy(config.strategy)) {
    std::string known;
    for (const auto& s : router.StrategyNames()) known += (known.empty() ? "" : ", ") + s;
    throw ConfigError("gateway config: strategy: unknown strategy '" + config.strategy +
                      "' (known: " + known + ")");
  }
  for (const auto& pool : config.pools) {
    if (!pool.kv_events || kv_pools.count(pool.name)) continue;
    auto keys = PromptKeys::Load(pool.kv_events->tokenizer, pool.kv_events->none_hash_seed);
    if (!keys.ok()) {
      throw ConfigError("gateway config: pools." + pool.name +
                        ".kv_events.tokenizer: " + keys.status().message());
    }
    kv_pools[pool.name] = KvModel{std::move(*keys), pool.kv_events->block_size, pool.name};
  }
  // Pools' keys (vllm serve --api-key), read once; AddEndpoint gives them to the pool's
  // endpoints (file pools and, for --kubernetes settings entries, the InferencePool's Pods).
  for (size_t p = 0; p < config.pools.size(); ++p) {
    const PoolConfig& pool = config.pools[p];
    if (pool.api_key_env.empty() && pool.api_key_file.empty()) continue;
    pool_api_keys[pool.name] =
        LoadApiKey(pool.api_key_env, pool.api_key_file, "pools[" + std::to_string(p) + "]");
  }
  for (const auto& pool : config.pools) {
    for (size_t i = 0; i < pool.endpoints.size(); ++i) {
      Endpoint ep;
      ep.info = routing::EndpointInfo{pool.name + "/" + std::to_string(i), pool.model, pool.name};
      ep.address = pool.endpoints[i];
      AddEndpoint(std::move(ep));
    }
  }
  for (size_t i = 0; i < config.providers.size(); ++i) {
    const ProviderConfig& p = config.providers[i];
    std::string where = "providers[" + std::to_string(i) + "]";
    std::string key = LoadProviderApiKey(p, where);
    CheckProviderCaFile(p, where);
    AddEndpoint(MakeProviderEndpoint("provider/" + p.name,
                                     std::make_shared<const ProviderConfig>(p), std::move(key)));
  }
}

void GatewayContext::AddEngineBlockKeys(const api::ParsedRequest& request,
                                        routing::RequestFeatures& features) const {
  auto it = kv_models.find(request.model);
  if (it == kv_models.end()) return;
  int block_size = it->second.block_size;
  for (size_t i = 0; block_size == 0 && i < endpoints.size(); ++i) {
    if (endpoints[i].info.pool != it->second.pool) continue;
    if (auto idx = router.KvIndex(endpoints[i].info.id)) block_size = idx->block_size;
  }
  if (block_size <= 0) return;  // no BlockStored seen yet: nothing to match against
  auto keys = it->second.keys->BlockKeys(request, block_size);
  if (!keys.ok()) return;  // not tokenized exactly: the approximate index answers
  features.engine_block_keys = std::move(keys->keys);
  features.engine_block_size = block_size;
  features.prompt_tokens = keys->prompt_tokens;
}

Endpoint MakeProviderEndpoint(std::string id, std::shared_ptr<const ProviderConfig> provider,
                              std::string api_key) {
  Endpoint ep;
  ep.info = routing::EndpointInfo{std::move(id), provider->serves_model, provider->name};
  ep.address = EndpointAddress{provider->base_url, provider->host, provider->port};
  ep.api_key = std::move(api_key);
  ep.breaker.emplace(provider->breaker_failures, provider->breaker_cooldown_s);
  ep.provider = std::move(provider);
  return ep;
}

const PoolConfig* GatewayContext::PoolSettings(const std::string& pool) const {
  for (const auto& p : config.pools)
    if (p.name == pool) return &p;
  return nullptr;
}

void GatewayContext::AddEndpoint(Endpoint ep) {
  RemoveEndpoint(ep.info.id);
  const std::string id = ep.info.id;
  router.AddEndpoint(ep.info, clock.Now());
  stats.SetEndpointHealthy(id, true);
  stats.SetCoolingDown(id, false);
  ep.healthy = true;
  ep.serial = next_endpoint_serial++;
  if (ep.provider) {
    admission.controller().SetEndpoint(id, id, admission::kUnlimited);
  } else {
    if (ep.api_key.empty()) {
      auto key = pool_api_keys.find(ep.info.pool);
      if (key != pool_api_keys.end()) ep.api_key = key->second;
    }
    stats.SetMetricsStale(id, false);
    const PoolConfig* settings = PoolSettings(ep.info.pool);
    admission.controller().SetEndpoint(id, ep.info.pool,
                                       settings ? settings->max_in_flight : admission::kUnlimited);
    auto kv = kv_pools.find(ep.info.pool);
    if (kv != kv_pools.end() && !kv_models.count(ep.info.model))
      kv_models[ep.info.model] = kv->second;
  }
  endpoints.push_back(std::move(ep));
  std::erase_if(endpoint_observers, [](const auto& o) { return o.expired(); });
  for (const auto& weak : std::vector(endpoint_observers)) {
    if (auto o = weak.lock()) o->OnEndpointAdded(*Find(id));
  }
  admission.Pump();
}

void GatewayContext::RemoveEndpoint(const std::string& id) {
  auto it = std::find_if(endpoints.begin(), endpoints.end(),
                         [&](const Endpoint& ep) { return ep.info.id == id; });
  if (it == endpoints.end()) return;
  std::string pool = it->info.pool;
  std::string model = it->info.model;
  bool local = !it->provider;
  endpoints.erase(it);
  for (const auto& weak : std::vector(endpoint_observers)) {
    if (auto o = weak.lock()) o->OnEndpointRemoved(id);
  }
  router.RemoveEndpoint(id);
  stats.RemoveEndpoint(id);
  admission.controller().RemoveEndpoint(id);
  outlier.Remove(id);
  // The model leaves kv_models with its pool's last endpoint.
  if (local && kv_models.count(model) && kv_models[model].pool == pool &&
      std::none_of(endpoints.begin(), endpoints.end(),
                   [&](const Endpoint& e) { return e.info.model == model && e.info.pool == pool; }))
    kv_models.erase(model);
}

bool GatewayContext::TenantMayUse(const std::string& tenant, const std::string& model) const {
  auto it = tenant_models.find(tenant);
  if (it == tenant_models.end()) return true;
  return std::find(it->second.begin(), it->second.end(), model) != it->second.end();
}

std::vector<std::string> GatewayContext::ApiKeys() const {
  std::vector<std::string> keys;
  for (const auto& ep : endpoints)
    if (!ep.api_key.empty()) keys.push_back(ep.api_key);
  return keys;
}

Endpoint* GatewayContext::FindMutable(const std::string& id) {
  for (auto& ep : endpoints)
    if (ep.info.id == id) return &ep;
  return nullptr;
}

void GatewayContext::OnUpstreamResult(const std::string& id, bool ok) {
  Endpoint* ep = FindMutable(id);
  if (!ep || !ep->breaker) return;
  if (ok) return ep->breaker->OnSuccess();
  if (ep->breaker->OnFailure(clock.Now())) {
    spdlog::warn("provider {}: circuit breaker open after {} consecutive failures", ep->info.id,
                 ep->breaker->consecutive_failures());
    ep->healthy = false;
    router.SetHealthy(id, false);
    stats.SetEndpointHealthy(id, false);
    admission.controller().SetAvailable(id, false);
  }
}

void GatewayContext::OnRequestResult(const std::string& id, routing::RequestResult result) {
  Endpoint* ep = FindMutable(id);
  if (!ep || ep->provider) return;
  Seconds now = clock.Now();
  if (!outlier.Record(id, result, now)) return;
  auto until = outlier.EjectedUntil(id, now);
  spdlog::warn("endpoint {} ejected for {:.1f} s after a failed request ({} ejection(s))", id,
               until ? *until - now : 0.0, outlier.ejections_total(id));
  stats.RecordEjection(id);
  if (!ep->healthy) return;
  ep->healthy = false;
  router.SetHealthy(id, false);
  stats.SetEndpointHealthy(id, false);
  admission.controller().SetAvailable(id, false);
}

void GatewayContext::CoolDown(const std::string& id, double wait_real_s) {
  if (!(wait_real_s > 0) || !Find(id)) return;
  const Seconds now = clock.Now();
  const Seconds until = now + wait_real_s * config.time_scale;
  if (!router.CoolDown(id, until, now)) return;  // already cooling: extended at most
  spdlog::info("endpoint {} cooling down for {:.3f} s (it asked to wait)", id, wait_real_s);
  stats.RecordCooldown(id);
  stats.SetCoolingDown(id, true);
  admission.controller().SetAvailable(id, false);
}

int GatewayContext::RetryAfterUnhealthyS(const std::vector<routing::EndpointId>& ids) const {
  Seconds now = clock.Now();
  std::optional<Seconds> first;
  for (const auto& id : ids) {
    const Endpoint* ep = Find(id);
    if (!ep) continue;
    std::optional<Seconds> until;
    if (ep->breaker) {
      if (ep->breaker->open()) until = ep->breaker->open_until();
    } else {
      until = outlier.EjectedUntil(id, now);
    }
    // Back once both its ill health and its cooldown are over.
    if (auto cooling = router.CoolingUntil(id, now); cooling && (!until || *cooling > *until))
      until = cooling;
    if (until && (!first || *until < *first)) first = until;
  }
  if (!first) return 1;
  return static_cast<int>(std::clamp(std::ceil(config.RealSeconds(*first - now)), 1.0, 3600.0));
}

std::vector<std::string> GatewayContext::ServableModels() const {
  std::vector<std::string> out;
  for (const auto& m : Models()) {
    for (const auto& ep : endpoints) {
      if (ep.info.model == m && ep.healthy) {
        out.push_back(m);
        break;
      }
    }
  }
  return out;
}

void GatewayContext::RefreshBreakers() {
  Seconds now = clock.Now();
  for (const auto& id : outlier.Unejected(now)) {
    Endpoint* ep = FindMutable(id);
    if (!ep || ep->healthy) continue;
    spdlog::info("endpoint {}: ejection over; eligible again", id);
    ep->healthy = true;
    router.SetHealthy(id, true);
    stats.SetEndpointHealthy(id, true);
    admission.controller().SetAvailable(id, !router.CoolingUntil(id, now));
    admission.Pump();
  }
  for (auto& ep : endpoints) {
    if (!ep.breaker || !ep.breaker->MaybeClose(now)) continue;
    spdlog::info("provider {}: cool-down over; trying it again", ep.info.id);
    ep.healthy = true;
    router.SetHealthy(ep.info.id, true);
    stats.SetEndpointHealthy(ep.info.id, true);
    admission.controller().SetAvailable(ep.info.id, !router.CoolingUntil(ep.info.id, now));
    admission.Pump();
  }
  // Cooldowns (an upstream's Retry-After) over: available again unless ill.
  for (const auto& id : router.CooldownsEnded(now)) {
    const Endpoint* ep = Find(id);
    if (!ep) continue;
    spdlog::info("endpoint {}: cooldown over", id);
    stats.SetCoolingDown(id, false);
    if (!ep->healthy) continue;
    admission.controller().SetAvailable(id, true);
    admission.Pump();
  }
}

const Endpoint* GatewayContext::Find(const std::string& id) const {
  for (const auto& ep : endpoints)
    if (ep.info.id == id) return &ep;
  return nullptr;
}

bool GatewayContext::ServesModel(const std::string& model) const {
  for (const auto& ep : endpoints)
    if (ep.info.model == model) return true;
  return false;
}

std::vector<routing::EndpointId> GatewayContext::EndpointsFor(const std::string& model) const {
  std::vector<routing::EndpointId> ids;
  for (const auto& ep : endpoints)
    if (ep.info.model == model) ids.push_back(ep.info.id);
  return ids;
}

std::vector<std::string> GatewayContext::Models() const {
  std::vector<std::string> models;
  for (const auto& ep : endpoints)
    if (std::find(models.begin(), models.end(), ep.info.model) == models.end())
      models.push_back(ep.info.model);
  return models;
}

const accounting::TenantLimits* GatewayContext::TenantLimitsFor(const std::string& tenant) const {
  if (!accounting) return nullptr;
  if (auto it = tenant_limits.find(tenant); it != tenant_limits.end())
    return it->second.any() ? &it->second : nullptr;
  const accounting::TenantLimits* l = accounting->LimitsFor(tenant);
  return l && l->any() ? l : nullptr;
}

std::string GatewayContext::NewRecordId() {
  const uint64_t high = record_rng();
  return accounting::MakeRecordId(high, record_rng());
}

bool GatewayContext::KnowsStrategy(const std::string& name) const {
  auto names = router.StrategyNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace kinference::gateway
