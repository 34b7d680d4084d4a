#include "gateway/context.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace kinference::gateway {

namespace {
routing::RouterConfig MakeRouterConfig(const GatewayConfig& c) {
  routing::RouterConfig rc;
  rc.block_chars = c.block_chars;
  rc.default_strategy = c.strategy;
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
  if (!KnowsStrategy(config.strategy)) {
    std::string known;
    for (const auto& s : router.StrategyNames()) known += (known.empty() ? "" : ", ") + s;
    throw ConfigError("gateway config: strategy: unknown strategy '" + config.strategy +
                      "' (known: " + known + ")");
  }
  for (const auto& pool : config.pools) {
    for (size_t i = 0; i < pool.endpoints.size(); ++i) {
      Endpoint ep;
      ep.info = routing::EndpointInfo{pool.name + "/" + std::to_string(i), pool.model, pool.name};
      ep.address = pool.endpoints[i];
      router.AddEndpoint(ep.info, clock.Now());
      stats.SetEndpointHealthy(ep.info.id, true);
      stats.SetMetricsStale(ep.info.id, false);
      endpoints.push_back(std::move(ep));
    }
  }
  for (const auto& pool : config.pools) {
    if (!pool.kv_events || kv_models.count(pool.model)) continue;
    auto keys = PromptKeys::Load(pool.kv_events->tokenizer, pool.kv_events->none_hash_seed);
    if (!keys.ok()) {
      throw ConfigError("gateway config: pools." + pool.name +
                        ".kv_events.tokenizer: " + keys.status().message());
    }
    kv_models[pool.model] = KvModel{std::move(*keys), pool.kv_events->block_size, pool.name};
  }
  for (size_t i = 0; i < config.providers.size(); ++i) {
    const ProviderConfig& p = config.providers[i];
    Endpoint ep;
    ep.info = routing::EndpointInfo{"provider/" + p.name, p.serves_model, p.name};
    ep.address = EndpointAddress{p.base_url, p.host, p.port};
    ep.provider = &p;
    ep.api_key = LoadProviderApiKey(p, "providers[" + std::to_string(i) + "]");
    CheckProviderCaFile(p, "providers[" + std::to_string(i) + "]");
    ep.breaker.emplace(p.breaker_failures, p.breaker_cooldown_s);
    router.AddEndpoint(ep.info, clock.Now());
    stats.SetEndpointHealthy(ep.info.id, true);
    endpoints.push_back(std::move(ep));
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
    admission.controller().SetAvailable(id, true);
    admission.Pump();
  }
  for (auto& ep : endpoints) {
    if (!ep.breaker || !ep.breaker->MaybeClose(now)) continue;
    spdlog::info("provider {}: cool-down over; trying it again", ep.info.id);
    ep.healthy = true;
    router.SetHealthy(ep.info.id, true);
    stats.SetEndpointHealthy(ep.info.id, true);
    admission.controller().SetAvailable(ep.info.id, true);
    admission.Pump();
  }
}

const Endpoint* GatewayContext::Find(const std::string& id) const {
  for (const auto& ep : endpoints)
    if (ep.info.id == id) return &ep;
  return nullptr;
}

bool GatewayContext::ServesModel(const std::string& model) const {
  for (const auto& pool : config.pools)
    if (pool.model == model) return true;
  for (const auto& p : config.providers)
    if (p.serves_model == model) return true;
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
  for (const auto& pool : config.pools)
    if (std::find(models.begin(), models.end(), pool.model) == models.end())
      models.push_back(pool.model);
  for (const auto& p : config.providers)
    if (std::find(models.begin(), models.end(), p.serves_model) == models.end())
      models.push_back(p.serves_model);
  return models;
}

bool GatewayContext::KnowsStrategy(const std::string& name) const {
  auto names = router.StrategyNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace kinference::gateway
