#include "accounting/config.h"

#include <yaml-cpp/yaml.h>

#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <cmath>
#include <filesystem>

#include "accounting/config_keys.h"

namespace kinference::accounting {
namespace {

[[noreturn]] void Fail(const std::string& field, const std::string& what) {
  throw ConfigError(field + ": " + what);
}

// A map key as text; YAML also allows a map or a list as a key, which no field is.
std::string KeyName(const YAML::Node& key, const std::string& where) {
  if (!key.IsScalar()) Fail(where, "keys must be plain strings");
  return key.Scalar();
}

void CheckKeys(const YAML::Node& node, const std::string& where,
               const std::set<std::string>& allowed) {
  if (!node.IsMap()) Fail(where, "expected a map");
  for (const auto& kv : node) {
    const std::string key = KeyName(kv.first, where);
    if (!allowed.contains(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      Fail(where + "." + key, "unknown key (expected one of " + list + ")");
    }
  }
}

// The keys the table (config_keys.cc) lists directly under `section`.
std::set<std::string> Section(std::string_view section) {
  return KeysUnder(AccountingConfigKeys(), section);
}

std::string String(const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar() || node.Scalar().empty()) Fail(field, "expected a non-empty string");
  return node.Scalar();
}

int64_t Integer(const YAML::Node& node, const std::string& field, int64_t min, int64_t max) {
  const std::string expected =
      "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!node.IsScalar()) Fail(field, expected);
  int64_t v;
  try {
    v = node.as<int64_t>();
  } catch (const YAML::Exception&) {
    Fail(field, expected + ", got '" + node.Scalar() + "'");
  }
  if (v < min || v > max) Fail(field, expected + ", got " + std::to_string(v));
  return v;
}

NanoUsd Usd(const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) Fail(field, "expected an amount of USD");
  auto r = ParseUsd(node.Scalar());
  if (!r.ok()) Fail(field, r.status().message());
  return *r;
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (base_dir.empty() || path.empty() || path.front() == '/') return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

LedgerConfig ParseLedger(const YAML::Node& node, const std::string& base_dir) {
  const std::string w = "accounting.ledger";
  CheckKeys(node, w, Section("accounting.ledger"));
  LedgerConfig c;
  if (node["store"]) {
    std::string s = String(node["store"], w + ".store");
    if (s == "sqlite") {
      c.store = StoreKind::kSqlite;
    } else if (s == "postgres") {
      c.store = StoreKind::kPostgres;
    } else if (s == "none") {
      c.store = StoreKind::kNone;
    } else {
      Fail(w + ".store", "expected sqlite, postgres or none, got '" + s + "'");
    }
  }
  if (node["sqlite_path"]) c.sqlite_path = String(node["sqlite_path"], w + ".sqlite_path");
  c.sqlite_path = Resolve(c.sqlite_path, base_dir);
  if (node["sqlite_synchronous"]) {
    std::string s = String(node["sqlite_synchronous"], w + ".sqlite_synchronous");
    if (s != "normal" && s != "full")
      Fail(w + ".sqlite_synchronous", "expected normal or full, got '" + s + "'");
    c.sqlite_synchronous_full = s == "full";
  }
  if (node["postgres"]) c.postgres = String(node["postgres"], w + ".postgres");
  if (c.store == StoreKind::kPostgres && c.postgres.empty())
    Fail(w + ".postgres", "missing (store: postgres needs a libpq connection string)");
  if (node["spool_dir"]) {
    c.spool_dir = Resolve(String(node["spool_dir"], w + ".spool_dir"), base_dir);
  } else if (c.store == StoreKind::kSqlite) {
    c.spool_dir = c.sqlite_path + ".spool";
  } else {
    c.spool_dir = Resolve("kinference-ledger.spool", base_dir);
  }
  if (node["spool_max_bytes"])
    c.spool_max_bytes = Integer(node["spool_max_bytes"], w + ".spool_max_bytes", 0, 1LL << 50);
  if (node["queue_capacity"])
    c.queue_capacity = Integer(node["queue_capacity"], w + ".queue_capacity", 1, 1 << 24);
  if (node["batch_size"]) c.batch_size = Integer(node["batch_size"], w + ".batch_size", 1, 10000);
  if (node["flush_interval_ms"])
    c.flush_interval_ms = Integer(node["flush_interval_ms"], w + ".flush_interval_ms", 1, 60000);
  if (node["retention_days"])
    c.retention_days = Integer(node["retention_days"], w + ".retention_days", 0, 36500);
  return c;
}

PriceTable ParsePrices(const YAML::Node& node) {
  const std::string w = "accounting.prices";
  if (!node.IsSequence()) Fail(w, "expected a list of {model, provider, input, output, ...}");
  std::vector<PriceEntry> entries;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string f = w + "[" + std::to_string(i) + "]";
    const YAML::Node e = node[i];
    CheckKeys(e, f, Section("accounting.prices[]"));
    PriceEntry p;
    if (!e["model"]) Fail(f + ".model", "missing (a served model name or \"*\")");
    p.model = String(e["model"], f + ".model");
    if (e["provider"]) p.provider = String(e["provider"], f + ".provider");
    if (!e["input"]) Fail(f + ".input", "missing (USD per million input tokens)");
    if (!e["output"]) Fail(f + ".output", "missing (USD per million output tokens)");
    p.price.input = Usd(e["input"], f + ".input");
    p.price.output = Usd(e["output"], f + ".output");
    p.price.cached_input =
        e["cached_input"] ? Usd(e["cached_input"], f + ".cached_input") : p.price.input;
    p.price.cache_write =
        e["cache_write"] ? Usd(e["cache_write"], f + ".cache_write") : p.price.input;
    for (const auto& seen : entries)
      if (seen.model == p.model && seen.provider == p.provider)
        Fail(f, "duplicate price for provider '" + p.provider + "', model '" + p.model + "'");
    entries.push_back(std::move(p));
  }
  return PriceTable(std::move(entries));
}

EstimateConfig ParseEstimate(const YAML::Node& node) {
  const std::string w = "accounting.estimate";
  CheckKeys(node, w, Section("accounting.estimate"));
  EstimateConfig c;
  if (node["chars_per_token"]) {
    double v = 0;
    try {
      v = node["chars_per_token"].as<double>();
    } catch (const YAML::Exception&) {
      v = -1;
    }
    if (!std::isfinite(v) || v < 0.5 || v > 100)
      Fail(w + ".chars_per_token", "expected a number in [0.5, 100]");
    c.chars_per_token = v;
  }
  if (node["output_tokens"])
    Fail(w + ".output_tokens",
         "no longer used: a request without max_tokens reserves its model's context window "
         "(set context_tokens or model_context_tokens instead; docs/accounting.md)");
  if (node["context_tokens"])
    c.context_tokens = Integer(node["context_tokens"], w + ".context_tokens", 1, 100'000'000);
  if (const YAML::Node m = node["model_context_tokens"]) {
    const std::string mw = w + ".model_context_tokens";
    if (!m.IsMap()) Fail(mw, "expected a map of model name to tokens");
    for (const auto& kv : m) {
      const std::string model = KeyName(kv.first, mw);
      c.model_context_tokens[model] = Integer(kv.second, mw + "." + model, 1, 100'000'000);
    }
  }
  return c;
}

RedisConfig ParseRedis(const YAML::Node& node) {
  const std::string w = "accounting.redis";
  CheckKeys(node, w, Section("accounting.redis"));
  RedisConfig c;
  if (!node["url"]) Fail(w + ".url", "missing (redis://host:port[/db])");
  const std::string url = String(node["url"], w + ".url");
  auto u = boost::urls::parse_uri(url);
  if (!u || u->scheme() != "redis" || u->host().empty() || u->has_userinfo() || u->has_query() ||
      u->has_fragment())
    Fail(w + ".url",
         "expected redis://host:port[/db] (no password: use password_env), got '" + url + "'");
  c.host = u->host_address();
  if (u->has_port()) {
    int port = u->port_number();
    if (port <= 0 || port > 65535) Fail(w + ".url", "bad port");
    c.port = static_cast<uint16_t>(port);
  }
  std::string path = u->path();
  if (!path.empty() && path != "/") {
    try {
      size_t pos = 0;
      c.db = std::stoi(path.substr(1), &pos);
      if (pos != path.size() - 1 || c.db < 0) throw std::invalid_argument("db");
    } catch (const std::exception&) {
      Fail(w + ".url", "the path must be a database number, got '" + path + "'");
    }
  }
  if (node["password_env"]) c.password_env = String(node["password_env"], w + ".password_env");
  if (node["timeout_ms"]) c.timeout_ms = Integer(node["timeout_ms"], w + ".timeout_ms", 1, 60000);
  if (node["key_prefix"]) c.key_prefix = String(node["key_prefix"], w + ".key_prefix");
  return c;
}

}  // namespace

const TenantLimits* LimitsConfig::For(const std::string& tenant) const {
  auto it = tenants.find(tenant);
  if (it != tenants.end()) return it->second.any() ? &it->second : nullptr;
  if (default_limits && default_limits->any()) return &*default_limits;
  return nullptr;
}

TenantLimits ParseTenantLimits(const YAML::Node& node, const std::string& w) {
  CheckKeys(node, w, Section("accounting.limits.default"));
  TenantLimits l;
  constexpr int64_t kMax = 1'000'000'000'000LL;
  if (node["requests_per_minute"])
    l.requests_per_minute =
        Integer(node["requests_per_minute"], w + ".requests_per_minute", 1, kMax);
  if (node["input_tokens_per_minute"])
    l.input_tokens_per_minute =
        Integer(node["input_tokens_per_minute"], w + ".input_tokens_per_minute", 1, kMax);
  if (node["output_tokens_per_minute"])
    l.output_tokens_per_minute =
        Integer(node["output_tokens_per_minute"], w + ".output_tokens_per_minute", 1, kMax);
  if (node["max_concurrent_requests"])
    l.max_concurrent_requests =
        Integer(node["max_concurrent_requests"], w + ".max_concurrent_requests", 1, 1'000'000);
  if (node["spend_per_day_usd"])
    l.spend_per_day = Usd(node["spend_per_day_usd"], w + ".spend_per_day_usd");
  if (node["spend_per_month_usd"])
    l.spend_per_month = Usd(node["spend_per_month_usd"], w + ".spend_per_month_usd");
  if (node["on_limits_unavailable"]) {
    std::string s = String(node["on_limits_unavailable"], w + ".on_limits_unavailable");
    if (s == "fail_open") {
      l.on_unavailable = OnUnavailable::kFailOpen;
    } else if (s == "fail_closed") {
      l.on_unavailable = OnUnavailable::kFailClosed;
    } else {
      Fail(w + ".on_limits_unavailable", "expected fail_open or fail_closed, got '" + s + "'");
    }
  }
  return l;
}

Result<TenantLimits> TenantLimitsFromJson(const boost::json::object& o, const std::string& w) {
  TenantLimits l;
  auto integer = [&](const boost::json::value& v, const std::string& f,
                     std::optional<int64_t>& out) -> Status {
    int64_t n = 0;
    if (v.is_int64()) {
      n = v.get_int64();
    } else if (v.is_uint64() && v.get_uint64() <= INT64_MAX) {
      n = static_cast<int64_t>(v.get_uint64());
    } else {
      return InvalidArgument(f + ": expected an integer >= 1", f);
    }
    if (n < 1) return InvalidArgument(f + ": expected an integer >= 1", f);
    out = n;
    return Status::Ok();
  };
  auto usd = [&](const boost::json::value& v, const std::string& f,
                 std::optional<NanoUsd>& out) -> Status {
    std::string text;
    if (v.is_string()) {
      text = std::string(v.get_string());
    } else if (v.is_int64() || v.is_uint64()) {
      text = boost::json::serialize(v);
    } else {
      return InvalidArgument(f + ": expected a decimal string of USD, e.g. \"12.50\"", f);
    }
    auto r = ParseUsd(text);
    if (!r.ok()) return InvalidArgument(f + ": " + r.status().message(), f);
    out = *r;
    return Status::Ok();
  };
  for (const auto& kv : o) {
    const std::string key(kv.key());
    const std::string f = w + "." + key;
    Status s;
    if (key == "requestsPerMinute") {
      s = integer(kv.value(), f, l.requests_per_minute);
    } else if (key == "inputTokensPerMinute") {
      s = integer(kv.value(), f, l.input_tokens_per_minute);
    } else if (key == "outputTokensPerMinute") {
      s = integer(kv.value(), f, l.output_tokens_per_minute);
    } else if (key == "maxConcurrentRequests") {
      s = integer(kv.value(), f, l.max_concurrent_requests);
    } else if (key == "spendPerDayUSD") {
      s = usd(kv.value(), f, l.spend_per_day);
    } else if (key == "spendPerMonthUSD") {
      s = usd(kv.value(), f, l.spend_per_month);
    } else if (key == "onLimitsUnavailable") {
      const auto* v = kv.value().if_string();
      if (v && *v == "FailOpen") {
        l.on_unavailable = OnUnavailable::kFailOpen;
      } else if (v && *v == "FailClosed") {
        l.on_unavailable = OnUnavailable::kFailClosed;
      } else {
        s = InvalidArgument(f + ": expected FailOpen or FailClosed", f);
      }
    } else {
      s = InvalidArgument(f + ": unknown field", f);
    }
    if (!s.ok()) return s;
  }
  return l;
}

AccountingConfig ParseAccountingConfig(const YAML::Node& node, const std::string& base_dir) {
  AccountingConfig c;
  c.enabled = true;
  if (node.IsNull()) {
    c.ledger.sqlite_path = Resolve(c.ledger.sqlite_path, base_dir);
    c.ledger.spool_dir = c.ledger.sqlite_path + ".spool";
    return c;
  }
  CheckKeys(node, "accounting", Section("accounting"));
  c.ledger =
      ParseLedger(node["ledger"] ? node["ledger"] : YAML::Node(YAML::NodeType::Map), base_dir);
  if (node["prices"]) c.prices = ParsePrices(node["prices"]);
  if (node["estimate"]) c.estimate = ParseEstimate(node["estimate"]);
  if (const YAML::Node l = node["limits"]) {
    CheckKeys(l, "accounting.limits", Section("accounting.limits"));
    if (l["default"])
      c.limits.default_limits = ParseTenantLimits(l["default"], "accounting.limits.default");
    if (const YAML::Node t = l["tenants"]) {
      if (!t.IsMap()) Fail("accounting.limits.tenants", "expected a map of tenant name to limits");
      for (const auto& kv : t) {
        const std::string name = KeyName(kv.first, "accounting.limits.tenants");
        c.limits.tenants[name] = ParseTenantLimits(kv.second, "accounting.limits.tenants." + name);
      }
    }
  }
  if (node["redis"]) c.redis = ParseRedis(node["redis"]);
  if (const YAML::Node u = node["usage_api"]) {
    CheckKeys(u, "accounting.usage_api", Section("accounting.usage_api"));
    if (const YAML::Node a = u["admin_tenants"]) {
      if (!a.IsSequence()) Fail("accounting.usage_api.admin_tenants", "expected a list of tenants");
      for (size_t i = 0; i < a.size(); ++i)
        c.admin_tenants.insert(
            String(a[i], "accounting.usage_api.admin_tenants[" + std::to_string(i) + "]"));
    }
  }
  return c;
}

int64_t EstimateConfig::ContextTokensFor(const std::string& model) const {
  auto it = model_context_tokens.find(model);
  return it == model_context_tokens.end() ? context_tokens : it->second;
}

}  // namespace kinference::accounting
