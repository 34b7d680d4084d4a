#include "crd/cluster_state.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <set>

namespace kinference::crd {

Sha256 Sha256Of(std::string_view data) {
  Sha256 d;
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), d.data());
  return d;
}

void ClusterState::Problem(const std::string& kind, const k8s::ObjectPtr& obj,
                           const std::string& message, bool kept) {
  std::string key = kind + " " + k8s::KeyOf(*obj);
  std::string stamp = std::string(k8s::ResourceVersionOf(*obj)) + ":" + message;
  auto& last = reported_[key];
  if (last == stamp) return;
  last = stamp;
  std::string msg = message;
  for (char& c : msg)
    if (c == '\n') c = ';';
  problems_.push_back(fmt::format("{}: {} ({})", key, msg,
                                  kept ? "serving its last accepted version" : "not served"));
}

namespace {

// The value of a Secret reference in `ns`; an error message naming `path` otherwise.
Result<std::vector<std::string>> SecretRef(const ClusterCaches& c, std::string_view ns,
                                           const SecretKeyRef& ref, const std::string& path) {
  k8s::ObjectPtr secret = c.secrets ? c.secrets->Get(k8s::KeyOf(ns, ref.name)) : nullptr;
  if (secret == nullptr)
    return Status(ErrorCode::kNotFound,
                  fmt::format("{}.name: Secret '{}' not found", path, ref.name));
  auto v = SecretValues(*secret, ref.key);
  if (!v.ok()) return Status(v.status().code(), fmt::format("{}: {}", path, v.status().message()));
  return v;
}

Result<ResolvedProvider> Resolve(const ClusterCaches& c, const k8s::ObjectPtr& obj) {
  auto spec = ProviderFromObject(*obj);
  if (!spec.ok()) return spec.status();
  ResolvedProvider p;
  p.spec = std::move(*spec);
  auto key = SecretRef(c, p.spec.ns, p.spec.api_key, "spec.apiKeySecretRef");
  if (!key.ok()) return key.status();
  p.api_key = key->front();
  if (p.spec.ca_kind == "Secret") {
    auto ca = SecretRef(c, p.spec.ns, p.spec.ca, "spec.caBundle.secretRef");
    if (!ca.ok()) return ca.status();
    p.ca_pem = ca->front();
  } else if (p.spec.ca_kind == "ConfigMap") {
    k8s::ObjectPtr cm =
        c.config_maps ? c.config_maps->Get(k8s::KeyOf(p.spec.ns, p.spec.ca.name)) : nullptr;
    if (cm == nullptr)
      return Status(
          ErrorCode::kNotFound,
          fmt::format("spec.caBundle.configMapRef.name: ConfigMap '{}' not found", p.spec.ca.name));
    auto v = ConfigMapValue(*cm, p.spec.ca.key);
    if (!v.ok())
      return Status(v.status().code(),
                    fmt::format("spec.caBundle.configMapRef: {}", v.status().message()));
    p.ca_pem = *v;
  }
  return p;
}

Result<ResolvedTenant> ResolveTenant(const ClusterCaches& c, const k8s::ObjectPtr& obj) {
  auto spec = TenantFromObject(*obj);
  if (!spec.ok()) return spec.status();
  ResolvedTenant t;
  t.spec = std::move(*spec);
  for (size_t i = 0; i < t.spec.api_keys.size(); ++i) {
    auto values =
        SecretRef(c, t.spec.ns, t.spec.api_keys[i], fmt::format("spec.apiKeys[{}].secretRef", i));
    if (!values.ok()) return values.status();
    for (const auto& v : *values) t.key_hashes.push_back(Sha256Of(v));
  }
  return t;
}

}  // namespace

ClusterSnapshot ClusterState::Update(const ClusterCaches& c) {
  ClusterSnapshot out;
  // Retention: objects gone from a cache are forgotten.
  auto prune = [](auto& kept, const k8s::ObjectCache* cache) {
    for (auto it = kept.begin(); it != kept.end();) {
      if (cache == nullptr || cache->Get(it->first) == nullptr)
        it = kept.erase(it);
      else
        ++it;
    }
  };
  prune(pools_, c.pools);
  prune(providers_, c.providers);
  prune(tenants_, c.tenants);
  prune(policies_, c.policies);

  // Accept or keep. `read` returns Result<T> for the object.
  auto accept = [this](const std::string& kind, auto& kept, const k8s::ObjectPtr& obj,
                       auto&& read) {
    std::string key = k8s::KeyOf(*obj);
    std::string rv(k8s::ResourceVersionOf(*obj));
    auto it = kept.find(key);
    // Read every time: what an object references (a Secret's key) may have changed.
    auto v = read(obj);
    if (v.ok()) {
      kept[key] = {rv, std::move(*v)};
      reported_.erase(kind + " " + key);
    } else {
      Problem(kind, obj, v.status().message(), it != kept.end());
    }
  };

  if (c.pools != nullptr) {
    for (const auto& [key, obj] : c.pools->items())
      accept("InferencePool", pools_, obj,
             [](const k8s::ObjectPtr& o) { return PoolFromObject(*o); });
  }
  for (const auto& [key, kept] : pools_) {
    PoolView view;
    view.spec = kept.value;
    if (c.pods != nullptr) {
      for (const auto& [pkey, pod] : c.pods->items()) {
        if (!Selects(view.spec, *pod) || !PodReady(*pod)) continue;
        std::string name(k8s::NameOf(*pod));
        // One endpoint per target port (data-parallel ranks); with one port the id is
        // <pool>/<pod>, with several <pool>/<pod>:<port>.
        const bool one = view.spec.target_ports.size() == 1;
        for (uint16_t port : view.spec.target_ports) {
          std::string id = one ? fmt::format("{}/{}", view.spec.name, name)
                               : fmt::format("{}/{}:{}", view.spec.name, name, port);
          view.endpoints.push_back(PodEndpoint{std::move(id), name, PodIp(*pod), port});
        }
      }
    }
    // Pool names are unique per namespace; a gateway serves one namespace.
    out.pools[view.spec.name] = std::move(view);
  }

  if (c.providers != nullptr) {
    for (const auto& [key, obj] : c.providers->items())
      accept("InferenceProvider", providers_, obj,
             [&c](const k8s::ObjectPtr& o) { return Resolve(c, o); });
  }
  for (const auto& [key, kept] : providers_) out.providers.push_back(kept.value);

  if (c.tenants != nullptr) {
    for (const auto& [key, obj] : c.tenants->items())
      accept("InferenceTenant", tenants_, obj,
             [&c](const k8s::ObjectPtr& o) { return ResolveTenant(c, o); });
  }
  // A key of two tenants identifies neither.
  std::map<Sha256, std::set<std::string>> owners;
  for (const auto& [key, kept] : tenants_)
    for (const auto& h : kept.value.key_hashes) owners[h].insert(kept.value.spec.name);
  for (const auto& [key, kept] : tenants_) {
    ResolvedTenant t = kept.value;
    std::vector<Sha256> unique;
    for (const auto& h : t.key_hashes) {
      const auto& who = owners[h];
      if (who.size() == 1) {
        unique.push_back(h);
      } else {
        std::string names;
        for (const auto& n : who) names += (names.empty() ? "" : ", ") + n;
        std::string msg = fmt::format(
            "InferenceTenant {}: an API key is shared by tenants {}; "
            "it identifies none of them",
            key, names);
        if (reported_[msg].empty()) {
          reported_[msg] = "1";
          problems_.push_back(msg);
        }
      }
    }
    t.key_hashes = std::move(unique);
    out.tenants.push_back(std::move(t));
  }

  if (c.policies != nullptr) {
    for (const auto& [key, obj] : c.policies->items())
      accept("InferencePolicy", policies_, obj,
             [](const k8s::ObjectPtr& o) { return PolicyFromObject(*o); });
  }
  for (const auto& [key, kept] : policies_) {
    out.policies.push_back(kept.value);
    out.policies_version += fmt::format("{}@{} ", key, kept.resource_version);
  }
  policy::SortPolicies(out.policies);
  return out;
}

}  // namespace kinference::crd
