#include "crd/resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <cmath>
#include <initializer_list>

#include "accounting/config.h"
#include "k8s/kubeconfig.h"
#include "k8s/resource.h"

namespace kinference::crd {
namespace json = boost::json;

namespace {

// Strict JSON field reader collecting "path: reason" errors.
class Reader {
 public:
  void Error(const std::string& path, const std::string& reason) {
    errors_.push_back(fmt::format("{}: {}", path, reason));
  }
  // An error already in "path: reason" form.
  void Raw(std::string error) { errors_.push_back(std::move(error)); }
  bool ok() const { return errors_.empty(); }
  Status status() const {
    std::string msg;
    for (const auto& e : errors_) msg += (msg.empty() ? "" : "\n") + e;
    return Status(ErrorCode::kInvalidArgument, msg);
  }

  // The object at `v`, checking that its keys are among `allowed`.
  const json::object* Object(const json::value* v, const std::string& path,
                             std::initializer_list<std::string_view> allowed) {
    if (v == nullptr) return nullptr;
    if (!v->is_object()) {
      Error(path, "expected an object");
      return nullptr;
    }
    for (const auto& kv : v->as_object()) {
      if (std::find(allowed.begin(), allowed.end(), kv.key()) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        Error(Join(path, kv.key()), fmt::format("unknown field (expected one of: {})", list));
      }
    }
    return &v->as_object();
  }

  std::optional<std::string> String(const json::object& o, std::string_view key,
                                    const std::string& path, bool required) {
    const json::value* v = o.if_contains(key);
    std::string p = Join(path, key);
    if (v == nullptr) {
      if (required) Error(p, "required");
      return std::nullopt;
    }
    if (!v->is_string() || v->get_string().empty()) {
      Error(p, "expected a non-empty string");
      return std::nullopt;
    }
    return std::string(v->get_string());
  }

  std::optional<double> Number(const json::object& o, std::string_view key, const std::string& path,
                               double lo, double hi) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr) return std::nullopt;
    std::string p = Join(path, key);
    if (!v->is_number()) {
      Error(p, "expected a number");
      return std::nullopt;
    }
    double d = v->to_number<double>();
    if (!(d >= lo && d <= hi)) {
      Error(p, fmt::format("{} out of range [{}, {}]", d, lo, hi));
      return std::nullopt;
    }
    return d;
  }

  std::optional<int> Int(const json::object& o, std::string_view key, const std::string& path,
                         int lo, int hi) {
    auto d = Number(o, key, path, lo, hi);
    if (!d) return std::nullopt;
    if (*d != std::floor(*d)) {
      Error(Join(path, key), "expected an integer");
      return std::nullopt;
    }
    return static_cast<int>(*d);
  }

  std::vector<std::string> Strings(const json::object& o, std::string_view key,
                                   const std::string& path) {
    std::vector<std::string> out;
    const json::value* v = o.if_contains(key);
    if (v == nullptr) return out;
    std::string p = Join(path, key);
    if (!v->is_array()) {
      Error(p, "expected a list of strings");
      return out;
    }
    const auto& a = v->as_array();
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string() || a[i].get_string().empty()) {
        Error(fmt::format("{}[{}]", p, i), "expected a non-empty string");
      } else {
        out.emplace_back(a[i].get_string());
      }
    }
    return out;
  }

  std::optional<SecretKeyRef> Ref(const json::value* v, const std::string& path, bool key_required,
                                  const char* default_key = "") {
    const json::object* o = Object(v, path, {"name", "key"});
    if (o == nullptr) return std::nullopt;
    SecretKeyRef ref;
    if (auto n = String(*o, "name", path, true)) ref.name = *n;
    if (auto k = String(*o, "key", path, key_required)) ref.key = *k;
    if (ref.key.empty()) ref.key = default_key;
    return ref;
  }

  static std::string Join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }

 private:
  std::vector<std::string> errors_;
};

// metadata.name / namespace: present in every object the API server sends.
Status CheckMetadata(const json::object& obj) {
  if (k8s::NameOf(obj).empty()) return InvalidArgument("metadata.name: required");
  return Status::Ok();
}

}  // namespace

Result<policy::Policy> PolicyFromObject(const json::object& obj) {
  if (Status s = CheckMetadata(obj); !s.ok()) return s;
  std::string source = fmt::format("InferencePolicy {}", k8s::KeyOf(obj));
  json::object doc{{"apiVersion", policy::kApiVersion},
                   {"kind", policy::kKind},
                   {"metadata", json::object{{"name", k8s::NameOf(obj)}}}};
  if (const auto* spec = obj.if_contains("spec")) doc["spec"] = *spec;
  // JSON is YAML: the file loader reads the object as it reads a file.
  auto parsed = policy::ParsePolicies(json::serialize(doc), source);
  if (!parsed.ok()) {
    // Drop the "SOURCE: " prefix of each line: the object is named by its status.
    std::string prefix = source + ": ";
    std::string msg;
    const Status status = parsed.status();  // by value: keep it alive while `rest` reads it
    std::string_view rest = status.message();
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      if (line.starts_with(prefix)) line.remove_prefix(prefix.size());
      msg += (msg.empty() ? "" : "\n") + std::string(line);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
    return Status(ErrorCode::kInvalidArgument, msg);
  }
  if (parsed->size() != 1) return InvalidArgument("spec: required");
  policy::Policy p = std::move(parsed->front());
  p.source = source;
  return p;
}

Result<ProviderSpec> ProviderFromObject(const json::object& obj) {
  if (Status s = CheckMetadata(obj); !s.ok()) return s;
  Reader r;
  ProviderSpec p;
  p.name = std::string(k8s::NameOf(obj));
  p.ns = std::string(k8s::NamespaceOf(obj));
  const json::object* spec = r.Object(
      obj.if_contains("spec"), "spec",
      {"api", "baseURL", "models", "apiKeySecretRef", "caBundle", "timeoutSeconds",
       "retriesBeforeFirstByte", "circuitBreaker", "anthropicVersion", "defaultMaxTokens"});
  if (spec == nullptr) {
    if (r.ok()) r.Error("spec", "required");
    return r.status();
  }
  if (auto api = r.String(*spec, "api", "spec", false)) {
    if (*api != "openai" && *api != "anthropic")
      r.Error("spec.api", fmt::format("unknown api '{}' (expected openai|anthropic)", *api));
    else
      p.api = *api;
  }
  if (auto url = r.String(*spec, "baseURL", "spec", true)) {
    p.base_url = *url;
    auto u = boost::urls::parse_uri(*url);
    if (!u || (u->scheme() != "http" && u->scheme() != "https") || !u->has_authority() ||
        u->has_query() || u->has_fragment() || u->has_userinfo() || u->host().empty()) {
      r.Error("spec.baseURL", fmt::format("expected http(s)://host[:port][/path], got '{}'", *url));
    } else if (p.api == "anthropic") {
      std::string path(u->encoded_path());
      while (path.ends_with("/")) path.pop_back();
      std::transform(path.begin(), path.end(), path.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (path.ends_with("/v1"))
        r.Error("spec.baseURL",
                "for api anthropic give the API root (https://api.anthropic.com); the gateway "
                "appends /v1/messages");
    }
  }
  const json::value* models = spec->if_contains("models");
  if (models == nullptr) {
    r.Error("spec.models", "required");
  } else if (!models->is_array() || models->as_array().empty()) {
    r.Error("spec.models", "expected a non-empty list");
  } else {
    const auto& a = models->as_array();
    for (size_t i = 0; i < a.size(); ++i) {
      std::string path = fmt::format("spec.models[{}]", i);
      const json::object* m = r.Object(&a[i], path, {"name", "servesModel"});
      if (m == nullptr) continue;
      ProviderModel pm;
      if (auto n = r.String(*m, "name", path, true)) pm.name = *n;
      pm.serves_model = r.String(*m, "servesModel", path, false).value_or(pm.name);
      for (const auto& other : p.models) {
        if (other.serves_model == pm.serves_model && !pm.serves_model.empty())
          r.Error(path + ".servesModel",
                  fmt::format("'{}' is served by an earlier entry too", pm.serves_model));
      }
      p.models.push_back(std::move(pm));
    }
  }
  if (!spec->if_contains("apiKeySecretRef")) {
    r.Error("spec.apiKeySecretRef", "required");
  } else if (auto ref = r.Ref(spec->if_contains("apiKeySecretRef"), "spec.apiKeySecretRef", true)) {
    p.api_key = *ref;
  }
  if (const json::object* ca =
          r.Object(spec->if_contains("caBundle"), "spec.caBundle", {"secretRef", "configMapRef"})) {
    bool secret = ca->contains("secretRef"), config_map = ca->contains("configMapRef");
    if (secret == config_map) {
      r.Error("spec.caBundle", "give exactly one of secretRef and configMapRef");
    } else if (auto ref = r.Ref(ca->if_contains(secret ? "secretRef" : "configMapRef"),
                                secret ? "spec.caBundle.secretRef" : "spec.caBundle.configMapRef",
                                false, "ca.crt")) {
      p.ca_kind = secret ? "Secret" : "ConfigMap";
      p.ca = *ref;
    }
  }
  if (auto t = r.Number(*spec, "timeoutSeconds", "spec", 0, 604800)) {
    if (*t <= 0)
      r.Error("spec.timeoutSeconds", "must be greater than 0");
    else
      p.timeout_s = *t;
  }
  if (auto n = r.Int(*spec, "retriesBeforeFirstByte", "spec", 0, 10))
    p.retries_before_first_byte = *n;
  if (const json::object* cb = r.Object(spec->if_contains("circuitBreaker"), "spec.circuitBreaker",
                                        {"failures", "cooldownSeconds"})) {
    if (auto f = r.Int(*cb, "failures", "spec.circuitBreaker", 1, 1000)) p.breaker_failures = *f;
    if (auto c = r.Number(*cb, "cooldownSeconds", "spec.circuitBreaker", 0, 604800))
      p.breaker_cooldown_s = *c;
  }
  if (auto v = r.String(*spec, "anthropicVersion", "spec", false)) p.anthropic_version = *v;
  if (auto m = r.Int(*spec, "defaultMaxTokens", "spec", 1, 1048576)) p.default_max_tokens = *m;
  if (!r.ok()) return r.status();
  return p;
}

Result<TenantSpec> TenantFromObject(const json::object& obj) {
  if (Status s = CheckMetadata(obj); !s.ok()) return s;
  Reader r;
  TenantSpec t;
  t.name = std::string(k8s::NameOf(obj));
  t.ns = std::string(k8s::NamespaceOf(obj));
  const json::object* spec =
      r.Object(obj.if_contains("spec"), "spec", {"apiKeys", "access", "limits"});
  if (spec == nullptr) {
    if (r.ok()) r.Error("spec", "required");
    return r.status();
  }
  if (const json::value* limits = spec->if_contains("limits")) {
    if (!limits->is_object()) {
      r.Error("spec.limits", "expected an object");
    } else if (auto l = accounting::TenantLimitsFromJson(limits->get_object(), "spec.limits");
               !l.ok()) {
      r.Raw(l.status().message());  // "spec.limits.<field>: <reason>"
    } else {
      t.limits = std::move(*l);
    }
  }
  const json::value* keys = spec->if_contains("apiKeys");
  if (keys == nullptr) {
    r.Error("spec.apiKeys", "required");
  } else if (!keys->is_array() || keys->as_array().empty()) {
    r.Error("spec.apiKeys", "expected a non-empty list");
  } else {
    const auto& a = keys->as_array();
    for (size_t i = 0; i < a.size(); ++i) {
      std::string path = fmt::format("spec.apiKeys[{}]", i);
      const json::object* k = r.Object(&a[i], path, {"secretRef"});
      if (k == nullptr) continue;
      if (!k->contains("secretRef")) {
        r.Error(path + ".secretRef", "required");
      } else if (auto ref = r.Ref(k->if_contains("secretRef"), path + ".secretRef", false)) {
        t.api_keys.push_back(*ref);
      }
    }
  }
  if (const json::object* access =
          r.Object(spec->if_contains("access"), "spec.access", {"models", "pools", "providers"})) {
    t.models = r.Strings(*access, "models", "spec.access");
    t.pools = r.Strings(*access, "pools", "spec.access");
    t.providers = r.Strings(*access, "providers", "spec.access");
  }
  if (!r.ok()) return r.status();
  return t;
}

Result<std::vector<std::string>> SecretValues(const json::object& secret, const std::string& key) {
  std::vector<std::string> out;
  const json::object* data = k8s::ObjectAt(secret, {"data"});
  std::string name(k8s::NameOf(secret));
  auto decode = [&](const json::value& v, std::string_view k) -> Status {
    std::string text;
    if (!v.is_string() || !k8s::Base64Decode(v.get_string(), text))
      return InvalidArgument(fmt::format("secret {}: data.{} is not base64", name, k));
    // Keys are often written with a trailing newline (echo "$KEY" > file).
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (!text.empty()) out.push_back(std::move(text));
    return Status::Ok();
  };
  if (key.empty()) {
    if (data != nullptr) {
      for (const auto& kv : *data) {
        if (Status s = decode(kv.value(), kv.key()); !s.ok()) return s;
      }
    }
    if (out.empty())
      return Status(ErrorCode::kNotFound, fmt::format("secret {} holds no data", name));
    return out;
  }
  const json::value* v = data == nullptr ? nullptr : data->if_contains(key);
  if (v == nullptr)
    return Status(ErrorCode::kNotFound, fmt::format("secret {} has no key '{}'", name, key));
  if (Status s = decode(*v, key); !s.ok()) return s;
  if (out.empty())
    return Status(ErrorCode::kNotFound, fmt::format("secret {}: key '{}' is empty", name, key));
  return out;
}

Result<std::string> ConfigMapValue(const json::object& config_map, const std::string& key) {
  std::string name(k8s::NameOf(config_map));
  if (const json::object* data = k8s::ObjectAt(config_map, {"data"})) {
    if (const json::value* v = data->if_contains(key); v != nullptr && v->is_string())
      return std::string(v->get_string());
  }
  if (const json::object* bin = k8s::ObjectAt(config_map, {"binaryData"})) {
    if (const json::value* v = bin->if_contains(key); v != nullptr && v->is_string()) {
      std::string text;
      if (!k8s::Base64Decode(v->get_string(), text))
        return InvalidArgument(fmt::format("configmap {}: binaryData.{} is not base64", name, key));
      return text;
    }
  }
  return Status(ErrorCode::kNotFound, fmt::format("configmap {} has no key '{}'", name, key));
}

Result<PoolSpec> PoolFromObject(const json::object& obj) {
  if (Status s = CheckMetadata(obj); !s.ok()) return s;
  PoolSpec p;
  p.name = std::string(k8s::NameOf(obj));
  p.ns = std::string(k8s::NamespaceOf(obj));
  const json::object* labels = k8s::ObjectAt(obj, {"spec", "selector", "matchLabels"});
  if (labels == nullptr || labels->empty())
    return InvalidArgument("spec.selector.matchLabels: required (a non-empty map)");
  for (const auto& kv : *labels) {
    if (!kv.value().is_string())
      return InvalidArgument(
          fmt::format("spec.selector.matchLabels.{}: expected a string", kv.key()));
    p.match_labels.emplace(kv.key(), kv.value().get_string());
  }
  const json::value* ports = k8s::Find(obj, {"spec", "targetPorts"});
  if (ports == nullptr || !ports->is_array() || ports->as_array().empty())
    return InvalidArgument("spec.targetPorts: required (at least one port)");
  for (size_t i = 0; i < ports->as_array().size(); ++i) {
    const json::value& port = ports->as_array()[i];
    const std::string field = fmt::format("spec.targetPorts[{}].number", i);
    const json::value* number = port.is_object() ? port.as_object().if_contains("number") : nullptr;
    if (number == nullptr || !number->is_number()) return InvalidArgument(field + ": required");
    double n = number->to_number<double>();
    if (!(n >= 1 && n <= 65535) || n != std::floor(n))
      return InvalidArgument(field + ": expected a port 1..65535");
    const auto value = static_cast<uint16_t>(n);
    if (std::find(p.target_ports.begin(), p.target_ports.end(), value) != p.target_ports.end())
      return InvalidArgument(field + ": duplicate port " + std::to_string(value));
    p.target_ports.push_back(value);
  }
  return p;
}

bool PodReady(const json::object& pod) {
  if (k8s::Find(pod, {"metadata", "deletionTimestamp"}) != nullptr) return false;
  if (PodIp(pod).empty()) return false;
  const json::value* conds = k8s::Find(pod, {"status", "conditions"});
  if (conds == nullptr || !conds->is_array()) return false;
  for (const auto& c : conds->as_array()) {
    if (!c.is_object()) continue;
    if (k8s::StringAt(c.as_object(), {"type"}) == "Ready")
      return k8s::StringAt(c.as_object(), {"status"}) == "True";
  }
  return false;
}

std::string PodIp(const json::object& pod) {
  return std::string(k8s::StringAt(pod, {"status", "podIP"}));
}

bool Selects(const PoolSpec& pool, const json::object& pod) {
  if (pool.match_labels.empty()) return false;
  if (!pool.ns.empty() && k8s::NamespaceOf(pod) != pool.ns) return false;
  for (const auto& [k, v] : pool.match_labels) {
    const json::object* labels = k8s::ObjectAt(pod, {"metadata", "labels"});
    const json::value* have = labels == nullptr ? nullptr : labels->if_contains(k);
    if (have == nullptr || !have->is_string() || have->get_string() != v) return false;
  }
  return true;
}

std::string FieldPathOf(const std::string& message) {
  std::string_view first(message);
  first = first.substr(0, first.find('\n'));
  size_t colon = first.find(": ");
  if (colon == std::string_view::npos) return "spec";
  std::string_view path = first.substr(0, colon);
  if (path.find(' ') != std::string_view::npos || path.empty()) return "spec";
  return std::string(path);
}

}  // namespace kinference::crd
