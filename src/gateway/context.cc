#include "gateway/context.h"

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
      router(MakeRouterConfig(config)) {
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
}

const Endpoint* GatewayContext::Find(const std::string& id) const {
  for (const auto& ep : endpoints)
    if (ep.info.id == id) return &ep;
  return nullptr;
}

bool GatewayContext::ServesModel(const std::string& model) const {
  for (const auto& pool : config.pools)
    if (pool.model == model) return true;
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
  return models;
}

bool GatewayContext::KnowsStrategy(const std::string& name) const {
  auto names = router.StrategyNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace kinference::gateway
