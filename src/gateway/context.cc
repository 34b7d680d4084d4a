#include "gateway/context.h"

#include <spdlog/spdlog.h>

#include <algorithm>

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
      policy(config, executor) {
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
      endpoints.push_back(std::move(ep));
    }
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
  }
}

void GatewayContext::RefreshBreakers() {
  Seconds now = clock.Now();
  for (auto& ep : endpoints) {
    if (!ep.breaker || !ep.breaker->MaybeClose(now)) continue;
    spdlog::info("provider {}: cool-down over; trying it again", ep.info.id);
    ep.healthy = true;
    router.SetHealthy(ep.info.id, true);
    stats.SetEndpointHealthy(ep.info.id, true);
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
