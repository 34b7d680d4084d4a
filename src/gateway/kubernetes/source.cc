#include "gateway/kubernetes/source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>
#include <chrono>
#include <iterator>

#include "gateway/config/config_fields.h"
#include "gateway/front/tenants.h"
#include "http/client.h"

namespace kinference::gateway {
namespace json = boost::json;

namespace {

struct Watched {
  const char* key;
  k8s::ResourceType type;
};
const Watched kWatched[] = {
    {"pools", k8s::kInferencePools},       {"pods", k8s::kPods},
    {"policies", k8s::kInferencePolicies}, {"providers", k8s::kInferenceProviders},
    {"tenants", k8s::kInferenceTenants},   {"secrets", k8s::kSecrets},
    {"configmaps", k8s::kConfigMaps},
};

// The provider endpoints of one InferenceProvider: one per model.
std::vector<std::pair<std::string, ProviderConfig>> ProviderConfigs(
    const crd::ResolvedProvider& r) {
  std::vector<std::pair<std::string, ProviderConfig>> out;
  const crd::ProviderSpec& s = r.spec;
  config_fields::HttpUrl url;
  try {
    url = config_fields::ParseHttpUrl(s.base_url, "spec.baseURL");
  } catch (const ConfigError& e) {
    spdlog::error("kubernetes: InferenceProvider {}/{}: {}", s.ns, s.name, e.what());
    return out;
  }
  for (const auto& m : s.models) {
    ProviderConfig p;
    p.name = s.name;
    p.model = m.name;
    p.serves_model = m.serves_model;
    p.base_url = s.base_url;
    p.tls = url.tls;
    p.host = url.host;
    p.port = url.port;
    std::string_view path = url.path;
    while (path.ends_with("/")) path.remove_suffix(1);
    p.base_path = std::string(path);
    p.timeout_s = s.timeout_s;
    p.retries_before_first_byte = s.retries_before_first_byte;
    p.breaker_failures = s.breaker_failures;
    p.breaker_cooldown_s = s.breaker_cooldown_s;
    p.ca_pem = r.ca_pem;
    p.api = s.api == "anthropic" ? ProviderApi::kAnthropic : ProviderApi::kOpenAi;
    p.anthropic_version = s.anthropic_version;
    p.default_max_tokens = s.default_max_tokens;
    std::string id = s.models.size() == 1 ? "provider/" + s.name
                                          : fmt::format("provider/{}/{}", s.name, m.serves_model);
    out.emplace_back(std::move(id), std::move(p));
  }
  return out;
}

// What a provider endpoint is made of, to notice any change (the key as its hash).
std::string Fingerprint(const ProviderConfig& p, const std::string& api_key) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", p.name, p.model, p.serves_model,
                     p.base_url, p.timeout_s, p.retries_before_first_byte, p.breaker_failures,
                     p.breaker_cooldown_s, ToHex(crd::Sha256Of(p.ca_pem)), static_cast<int>(p.api),
                     p.anthropic_version, p.default_max_tokens, ToHex(crd::Sha256Of(api_key)));
}

// The policy that keeps only a tenant's allowed pools and providers for its requests.
std::optional<policy::Policy> AccessPolicy(const crd::TenantSpec& t) {
  if (t.pools.empty() && t.providers.empty()) return std::nullopt;
  policy::Policy p;
  p.name = "tenant-access." + t.name;
  p.source = fmt::format("InferenceTenant {}/{} spec.access", t.ns, t.name);
  p.priority = kTenantAccessPriority;
  p.match.tenants = {t.name};
  policy::Selector keep;
  keep.pools = t.pools;
  keep.providers = t.providers;
  // An empty list allows every endpoint of that class.
  if (t.pools.empty()) keep.classes.push_back(policy::EndpointClass::kLocal);
  if (t.providers.empty()) keep.classes.push_back(policy::EndpointClass::kProvider);
  p.constraints.include = keep;
  return p;
}

}  // namespace

KubernetesSource::KubernetesSource(std::shared_ptr<GatewayContext> ctx,
                                   std::shared_ptr<k8s::RestClient> client, std::string ns)
    : ctx_(std::move(ctx)),
      client_(std::move(client)),
      ns_(std::move(ns)),
      sync_timer_(ctx_->executor) {}

bool KubernetesSource::synced() const {
  for (const auto& [k, r] : reflectors_)
    if (!r->synced()) return false;
  return !reflectors_.empty();
}

void KubernetesSource::Start() {
  if (!stopped_) return;
  stopped_ = false;
  file_tenants_ = ctx_->config.tenants;
  spdlog::info("kubernetes: watching namespace {} ({})", ns_, client_->config().source);
  for (const auto& w : kWatched) {
    k8s::ReflectorOptions o;
    o.type = w.type;
    o.ns = ns_;
    std::weak_ptr<KubernetesSource> weak = weak_from_this();
    reflectors_[w.key] = k8s::Reflector::Create(client_, o, [weak](const auto&) {
      if (auto self = weak.lock()) self->Schedule();
    });
  }
  for (auto& [k, r] : reflectors_) r->Start();
}

void KubernetesSource::Stop() {
  stopped_ = true;
  sync_timer_.cancel();
  for (auto& [k, r] : reflectors_) r->Stop();
}

void KubernetesSource::Schedule() {
  if (scheduled_ || stopped_) return;
  scheduled_ = true;
  boost::asio::post(ctx_->executor, [self = shared_from_this()] {
    self->scheduled_ = false;
    if (!self->stopped_) self->Apply();
  });
}

void KubernetesSource::Apply() {
  // Until every collection has listed once, a partial view (a tenant before its Secret)
  // would serve objects as broken; a reflector whose list was empty reports no change, so
  // this polls.
  if (!synced()) {
    sync_timer_.expires_after(std::chrono::milliseconds(100));
    sync_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      if (auto self = weak.lock(); self && !ec) self->Schedule();
    });
    return;
  }
  if (!logged_synced_) {
    logged_synced_ = true;
    spdlog::info("kubernetes: every collection listed; applying");
  }
  crd::ClusterCaches c;
  c.pools = &reflectors_["pools"]->cache();
  c.pods = &reflectors_["pods"]->cache();
  c.policies = &reflectors_["policies"]->cache();
  c.providers = &reflectors_["providers"]->cache();
  c.tenants = &reflectors_["tenants"]->cache();
  c.secrets = &reflectors_["secrets"]->cache();
  c.config_maps = &reflectors_["configmaps"]->cache();
  crd::ClusterSnapshot snap = state_.Update(c);
  for (const auto& p : state_.TakeProblems()) spdlog::warn("kubernetes: {}", p);
  ApplyPools(snap);
  ApplyProviders(snap);
  ApplyTenants(snap);
  ApplyPolicies(snap);
}

void KubernetesSource::ApplyPools(const crd::ClusterSnapshot& snap) {
  // Wanted: every ready pod whose model is known; discovery starts for the others.
  std::map<std::string, Endpoint> wanted;
  wanted_.clear();
  for (const auto& [name, pool] : snap.pools) {
    for (const auto& pe : pool.endpoints) {
      // "ip:port", IPv6 in brackets (RFC 3986 host syntax).
      std::string address = pe.ip.find(':') == std::string::npos
                                ? fmt::format("{}:{}", pe.ip, pe.port)
                                : fmt::format("[{}]:{}", pe.ip, pe.port);
      wanted_.insert(address);
      auto model = models_.find(address);
      if (model == models_.end()) {
        DiscoverModel(address, pe.ip, pe.port);
        continue;
      }
      Endpoint ep;
      ep.info = routing::EndpointInfo{pe.id, model->second, name};
      ep.address = EndpointAddress{"http://" + address, pe.ip, pe.port};
      wanted.emplace(pe.id, std::move(ep));
    }
  }
  // Only the endpoints this source added are its to remove (file pools stay).
  for (auto it = pod_endpoints_.begin(); it != pod_endpoints_.end();) {
    const Endpoint* ep = ctx_->Find(*it);
    auto w = wanted.find(*it);
    if (ep != nullptr && w != wanted.end() && w->second.address.url == ep->address.url &&
        w->second.info.model == ep->info.model) {
      ++it;
      continue;
    }
    spdlog::info("kubernetes: endpoint {} removed", *it);
    ctx_->RemoveEndpoint(*it);
    it = pod_endpoints_.erase(it);
  }
  for (auto& [id, ep] : wanted) {
    if (pod_endpoints_.count(id) > 0) continue;
    if (ctx_->Find(id) != nullptr) {
      spdlog::warn("kubernetes: endpoint {} is also in the config file; the file's is kept", id);
      continue;
    }
    spdlog::info("kubernetes: endpoint {} at {} serving {}", id, ep.address.url, ep.info.model);
    pod_endpoints_.insert(id);
    ctx_->AddEndpoint(std::move(ep));
  }
  // Forget models of addresses no longer wanted (a new pod may reuse the IP).
  std::erase_if(models_, [&](const auto& kv) { return wanted_.count(kv.first) == 0; });
}

void KubernetesSource::DiscoverModel(const std::string& address, const std::string& host,
                                     uint16_t port) {
  if (!discovering_.insert(address).second) return;
  http::ClientRequest req;
  req.method = "GET";
  req.host = host;
  req.port = port;
  req.target = "/v1/models";
  req.content_type.clear();
  req.total_timeout_s = 2;
  http::Fetch(
      ctx_->executor, std::move(req),
      [self = shared_from_this(), address, host, port](Result<http::Response> r) {
        if (self->stopped_) return;
        std::string model;
        if (r.ok() && r->status == 200) {
          boost::system::error_code ec;
          json::value v = json::parse(r->body, ec);
          const json::value* data =
              !ec && v.is_object() ? v.as_object().if_contains("data") : nullptr;
          if (data && data->is_array() && !data->as_array().empty() &&
              data->as_array()[0].is_object()) {
            model = std::string(k8s::StringAt(data->as_array()[0].as_object(), {"id"}));
          }
        }
        if (!model.empty()) {
          self->discovering_.erase(address);
          if (self->wanted_.count(address) == 0) return;  // gone meanwhile
          self->models_[address] = model;
          return self->Schedule();
        }
        spdlog::debug("kubernetes: GET http://{}/v1/models: {}", address,
                      r.ok() ? fmt::format("status {}", r->status) : r.status().message());
        auto timer = std::make_shared<boost::asio::steady_timer>(self->ctx_->executor);
        timer->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(kModelDiscoveryRetryS)));
        timer->async_wait([self, timer, address, host, port](boost::system::error_code ec) {
          self->discovering_.erase(address);
          if (ec || self->stopped_ || self->wanted_.count(address) == 0) return;
          self->DiscoverModel(address, host, port);
        });
      });
}

void KubernetesSource::ApplyProviders(const crd::ClusterSnapshot& snap) {
  std::map<std::string, std::pair<ProviderConfig, std::string>> wanted;  // id -> (config, key)
  for (const auto& r : snap.providers) {
    for (auto& [id, p] : ProviderConfigs(r))
      wanted.emplace(id, std::make_pair(std::move(p), r.api_key));
  }
  // provider_fingerprints_ holds the endpoints this source added (file providers stay).
  for (auto it = provider_fingerprints_.begin(); it != provider_fingerprints_.end();) {
    auto w = wanted.find(it->first);
    if (w != wanted.end() && Fingerprint(w->second.first, w->second.second) == it->second) {
      ++it;
      continue;
    }
    spdlog::info("kubernetes: provider endpoint {} removed", it->first);
    ctx_->RemoveEndpoint(it->first);
    it = provider_fingerprints_.erase(it);
  }
  for (auto& [id, pk] : wanted) {
    if (provider_fingerprints_.count(id) > 0) continue;
    if (ctx_->Find(id) != nullptr) {
      spdlog::warn(
          "kubernetes: provider endpoint {} is also in the config file; the file's is kept", id);
      continue;
    }
    provider_fingerprints_[id] = Fingerprint(pk.first, pk.second);
    spdlog::info("kubernetes: provider endpoint {} ({} serving {})", id, pk.first.base_url,
                 pk.first.serves_model);
    ctx_->AddEndpoint(
        MakeProviderEndpoint(id, std::make_shared<const ProviderConfig>(pk.first), pk.second));
  }
}

void KubernetesSource::ApplyTenants(const crd::ClusterSnapshot& snap) {
  std::string fingerprint;
  for (const auto& t : snap.tenants) {
    fingerprint += t.spec.name + ":";
    for (const auto& h : t.key_hashes) fingerprint += ToHex(h) + ",";
    for (const auto& m : t.spec.models) fingerprint += "m=" + m + ",";
    if (const auto& l = t.spec.limits) {  // spec.limits: every field, in order
      fmt::format_to(
          std::back_inserter(fingerprint), "l={},{},{},{},{},{},{}",
          l->requests_per_minute.value_or(0), l->input_tokens_per_minute.value_or(0),
          l->output_tokens_per_minute.value_or(0), l->max_concurrent_requests.value_or(0),
          l->spend_per_day.value_or(-1), l->spend_per_month.value_or(-1),
          l->on_unavailable == accounting::OnUnavailable::kFailClosed ? "closed" : "open");
    }
    fingerprint += ";";
  }
  if (fingerprint == tenants_fingerprint_) return;
  tenants_fingerprint_ = fingerprint;
  // The config file's settings (anonymous tenant, trusted header, its own keys) stay.
  TenantsConfig t = file_tenants_;
  t.enabled = t.enabled || !snap.tenants.empty();
  std::map<std::string, std::vector<std::string>> models;
  std::map<std::string, accounting::TenantLimits> limits;
  for (const auto& r : snap.tenants) {
    if (r.spec.limits) limits[r.spec.name] = *r.spec.limits;
    for (const auto& h : r.key_hashes) {
      TenantKey k;
      k.sha256 = h;
      k.tenant = r.spec.name;
      t.keys.push_back(std::move(k));
    }
    if (!r.spec.models.empty()) models[r.spec.name] = r.spec.models;
  }
  spdlog::info("kubernetes: {} tenant(s), {} API key(s)", snap.tenants.size(), t.keys.size());
  ctx_->config.tenants = std::move(t);
  ctx_->tenant_models = std::move(models);
  // spec.limits are enforced only with an accounting section (the limiter lives there).
  if (!limits.empty() && !ctx_->accounting)
    spdlog::warn(
        "kubernetes: {} tenant(s) set spec.limits but the gateway config has no accounting "
        "section; their limits are not enforced",
        limits.size());
  ctx_->tenant_limits = std::move(limits);
}

void KubernetesSource::ApplyPolicies(const crd::ClusterSnapshot& snap) {
  std::vector<policy::Policy> policies = snap.policies;
  std::string fingerprint = snap.policies_version;
  for (const auto& t : snap.tenants) {
    if (auto p = AccessPolicy(t.spec)) {
      fingerprint += p->name + "(";
      for (const auto& x : t.spec.pools) fingerprint += x + ",";
      fingerprint += "|";
      for (const auto& x : t.spec.providers) fingerprint += x + ",";
      fingerprint += ") ";
      policies.push_back(std::move(*p));
    }
  }
  if (fingerprint == policies_fingerprint_) return;
  policies_fingerprint_ = fingerprint;
  policy::SortPolicies(policies);
  size_t n = policies.size();
  uint64_t generation = ctx_->policy.store.Set(std::move(policies));
  ctx_->stats.SetPolicyGeneration(generation);
  spdlog::info("kubernetes: {} policies in effect (generation {})", n, generation);
}

}  // namespace kinference::gateway
