#include "gateway/config/config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "accounting/config.h"
#include "common/logging.h"
#include "gateway/config/config_fields.h"
#include "gateway/config/config_keys.h"

namespace kinference::gateway {
namespace {

using config_fields::CheckKeys;
using config_fields::DurationS;
using config_fields::Fail;
using config_fields::NonEmptyString;
using config_fields::Positive;
using config_fields::Scalar;

std::vector<std::string> ZmqEndpoints(const YAML::Node& node, const std::string& field,
                                      size_t count) {
  if (!node.IsSequence() || node.size() != count)
    Fail(field,
         "expected a list of " + std::to_string(count) + " tcp://host:port (one per endpoint)");
  std::vector<std::string> out;
  for (size_t i = 0; i < node.size(); ++i) {
    std::string ep = NonEmptyString(node[i], field + "[" + std::to_string(i) + "]");
    if (!ep.starts_with("tcp://") || ep.rfind(':') <= 6)
      Fail(field + "[" + std::to_string(i) + "]", "expected tcp://host:port, got '" + ep + "'");
    out.push_back(std::move(ep));
  }
  return out;
}

KvEventsConfig ParseKvEvents(const YAML::Node& node, const std::string& where, size_t count) {
  if (!node.IsMap()) Fail(where, "expected a map with tokenizer (and endpoints, topic...)");
  CheckKeys(node, where, ConfigSection("pools[].kv_events"));
  KvEventsConfig c;
  if (!node["tokenizer"]) Fail(where + ".tokenizer", "missing (engine-sim or a model folder)");
  c.tokenizer = NonEmptyString(node["tokenizer"], where + ".tokenizer");
  if (node["endpoints"]) c.endpoints = ZmqEndpoints(node["endpoints"], where + ".endpoints", count);
  if (node["replay_endpoints"]) {
    if (c.endpoints.empty()) Fail(where + ".replay_endpoints", "needs endpoints");
    c.replay_endpoints = ZmqEndpoints(node["replay_endpoints"], where + ".replay_endpoints", count);
  }
  if (node["topic"]) {
    if (c.endpoints.empty()) Fail(where + ".topic", "needs endpoints (else discovered)");
    c.topic = Scalar<std::string>(node["topic"], where + ".topic", "a string");
  }
  if (node["block_size"]) {
    c.block_size = Scalar<int>(node["block_size"], where + ".block_size", "an integer");
    if (c.block_size < 0) Fail(where + ".block_size", "must be >= 0");
  }
  if (node["none_hash_seed"])
    c.none_hash_seed = NonEmptyString(node["none_hash_seed"], where + ".none_hash_seed");
  return c;
}

PoolConfig ParsePool(const YAML::Node& node, const std::string& where, ConfigMode mode) {
  if (!node.IsMap()) Fail(where, "expected a map with name, model, endpoints");
  CheckKeys(node, where, ConfigSection("pools[]"));
  PoolConfig pool;
  if (!node["name"]) Fail(where + ".name", "missing");
  pool.name = NonEmptyString(node["name"], where + ".name");
  const YAML::Node eps = node["endpoints"];
  // --kubernetes: an entry without endpoints holds settings for the InferencePool of that
  // name (its Pods' models come from their /v1/models).
  const bool settings_only = mode == ConfigMode::kKubernetes && !eps;
  if (!settings_only && !node["model"]) Fail(where + ".model", "missing");
  if (node["model"]) pool.model = NonEmptyString(node["model"], where + ".model");
  if (!settings_only && (!eps || !eps.IsSequence() || eps.size() == 0))
    Fail(where + ".endpoints", "expected a non-empty list of URLs");
  for (size_t i = 0; !settings_only && i < eps.size(); ++i) {
    std::string field = where + ".endpoints[" + std::to_string(i) + "]";
    EndpointAddress a = ParseEndpointUrl(NonEmptyString(eps[i], field), field);
    for (const auto& seen : pool.endpoints)
      if (seen.host == a.host && seen.port == a.port)
        Fail(field, "duplicate endpoint " + a.host + ":" + std::to_string(a.port));
    pool.endpoints.push_back(std::move(a));
  }
  if (const auto m = node["max_in_flight"]) {
    if (m.IsScalar() && m.Scalar() == "derive") {
      pool.max_in_flight = -1;
    } else {
      int v = Scalar<int>(m, where + ".max_in_flight", "an integer or derive");
      if (v < 0) Fail(where + ".max_in_flight", "must be >= 0 (0: no limit) or derive");
      pool.max_in_flight = v;
    }
  }
  if (node["kv_events"]) {
    if (settings_only && node["kv_events"].IsMap() && node["kv_events"]["endpoints"])
      Fail(where + ".kv_events.endpoints",
           "not for an InferencePool's Pods: each Pod's publisher is discovered from its "
           "/kv_event_sources");
    pool.kv_events = ParseKvEvents(node["kv_events"], where + ".kv_events", pool.endpoints.size());
  }
  if (node["api_key_env"])
    pool.api_key_env = NonEmptyString(node["api_key_env"], where + ".api_key_env");
  if (node["api_key_file"])
    pool.api_key_file = NonEmptyString(node["api_key_file"], where + ".api_key_file");
  if (!pool.api_key_env.empty() && !pool.api_key_file.empty())
    Fail(where + ".api_key_env", "give at most one of api_key_env and api_key_file");
  return pool;
}

}  // namespace

EndpointAddress ParseEndpointUrl(const std::string& url, const std::string& field) {
  const std::string expected = "expected http://host:port, got '" + url + "'";
  if (!url.starts_with("http://")) Fail(field, expected);
  config_fields::HttpUrl u = config_fields::ParseHttpUrl(url, field);
  if (!u.explicit_port) Fail(field, expected);
  // vLLM serves its API under /v1 at the root: "/v1" (the OpenAI base-URL habit) is
  // accepted; any other path would be silently dropped, so it is refused.
  std::string_view path = u.path;
  while (path.ends_with("/")) path.remove_suffix(1);
  if (!path.empty() && path != "/v1")
    Fail(field, "path '" + u.path + "' not supported (vLLM serves at the root; " + expected + ")");
  return EndpointAddress{url, std::move(u.host), u.port};
}

GatewayConfig ParseGatewayConfig(std::string_view yaml_text, ConfigMode mode,
                                 const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(std::string("gateway config: invalid YAML: ") + e.what());
  }
  if (!root.IsMap()) throw ConfigError("gateway config: expected a map at the top level");
  CheckKeys(root, "", ConfigSection(""));
  GatewayConfig c;
  if (const auto listen = root["listen"]) {
    if (!listen.IsMap()) Fail("listen", "expected a map with address, port");
    CheckKeys(listen, "listen", ConfigSection("listen"));
    if (const auto tls = listen["tls"]) {
      if (!tls.IsMap()) Fail("listen.tls", "expected a map with cert_file, key_file");
      CheckKeys(tls, "listen.tls", ConfigSection("listen.tls"));
      if (!tls["cert_file"] || !tls["key_file"])
        Fail("listen.tls", "cert_file and key_file are both required");
      c.tls.cert_file = NonEmptyString(tls["cert_file"], "listen.tls.cert_file");
      c.tls.key_file = NonEmptyString(tls["key_file"], "listen.tls.key_file");
      if (tls["client_ca_file"])
        c.tls.client_ca_file = NonEmptyString(tls["client_ca_file"], "listen.tls.client_ca_file");
      if (tls["reload_interval_s"])
        c.tls.reload_interval_s =
            DurationS(tls["reload_interval_s"], "listen.tls.reload_interval_s",
                      /*zero_allowed=*/true);
    }
    if (listen["address"]) c.listen_address = NonEmptyString(listen["address"], "listen.address");
    if (listen["port"]) {
      int port = Scalar<int>(listen["port"], "listen.port", "an integer");
      if (port < 0 || port > 65535) Fail("listen.port", "must be 0..65535");
      c.listen_port = static_cast<uint16_t>(port);
    }
  }
  if (const auto admin = root["admin_listen"]) {
    if (!admin.IsMap()) Fail("admin_listen", "expected a map with address, port");
    CheckKeys(admin, "admin_listen", ConfigSection("admin_listen"));
    AdminListenConfig a;
    if (admin["address"]) a.address = NonEmptyString(admin["address"], "admin_listen.address");
    if (admin["port"]) {
      int port = Scalar<int>(admin["port"], "admin_listen.port", "an integer");
      if (port < 0 || port > 65535) Fail("admin_listen.port", "must be 0..65535");
      a.port = static_cast<uint16_t>(port);
    }
    if (a.port != 0 && a.port == c.listen_port && a.address == c.listen_address)
      Fail("admin_listen.port", "must differ from listen.port on the same address");
    c.admin_listen = std::move(a);
  }
  if (const auto t = root["server_timeouts"]) {
    if (!t.IsMap()) Fail("server_timeouts", "expected a map with header_s, keep_alive_s, body_s");
    CheckKeys(t, "server_timeouts", ConfigSection("server_timeouts"));
    if (t["header_s"])
      c.server_timeouts.header_s = DurationS(t["header_s"], "server_timeouts.header_s", true);
    if (t["keep_alive_s"])
      c.server_timeouts.keep_alive_s =
          DurationS(t["keep_alive_s"], "server_timeouts.keep_alive_s", true);
    if (t["body_s"])
      c.server_timeouts.body_s = DurationS(t["body_s"], "server_timeouts.body_s", true);
  }
  if (root["log_format"]) {
    c.log_format = NonEmptyString(root["log_format"], "log_format");
    if (auto f = ParseLogFormat(c.log_format); !f.ok()) Fail("log_format", f.status().message());
  }
  if (root["log_level"]) {
    c.log_level = NonEmptyString(root["log_level"], "log_level");
    if (auto l = ParseLogLevel(c.log_level); !l.ok()) Fail("log_level", l.status().message());
  }
  if (root["strategy"]) c.strategy = NonEmptyString(root["strategy"], "strategy");
  if (root["scrape_interval_s"])
    c.scrape_interval_s = DurationS(root["scrape_interval_s"], "scrape_interval_s");
  if (root["time_scale"]) c.time_scale = Positive(root["time_scale"], "time_scale");
  if (root["request_timeout_s"])
    c.request_timeout_s = DurationS(root["request_timeout_s"], "request_timeout_s");
  if (root["max_body_bytes"]) {
    auto v = Scalar<long long>(root["max_body_bytes"], "max_body_bytes", "an integer");
    if (v <= 0) Fail("max_body_bytes", "must be > 0");
    c.max_body_bytes = static_cast<size_t>(v);
  }
  if (root["max_buffered_body_bytes"]) {
    auto v =
        Scalar<long long>(root["max_buffered_body_bytes"], "max_buffered_body_bytes", "an integer");
    if (v < 0) Fail("max_buffered_body_bytes", "must be >= 0 (0: no limit)");
    if (v > 0 && static_cast<unsigned long long>(v) < c.max_body_bytes)
      Fail("max_buffered_body_bytes",
           "must be at least max_body_bytes (" + std::to_string(c.max_body_bytes) +
               "), or 0 for no limit: a body between the two could never be read");
    c.max_buffered_body_bytes = static_cast<size_t>(v);
  }
  if (root["max_connections"]) {
    auto v = Scalar<long long>(root["max_connections"], "max_connections", "an integer");
    if (v < 0) Fail("max_connections", "must be >= 0 (0: no limit)");
    c.max_connections = static_cast<size_t>(v);
  }
  if (root["block_chars"]) {
    auto v = Scalar<long long>(root["block_chars"], "block_chars", "an integer");
    if (v <= 0) Fail("block_chars", "must be > 0");
    c.block_chars = static_cast<size_t>(v);
  }
  if (root["router_seed"]) {
    auto v = Scalar<long long>(root["router_seed"], "router_seed", "an integer");
    if (v < 0) Fail("router_seed", "must be >= 0");
    c.router_seed = static_cast<uint64_t>(v);
  }
  if (root["drain_timeout_s"])
    c.drain_timeout_s =
        DurationS(root["drain_timeout_s"], "drain_timeout_s", /*zero_allowed=*/true);
  if (root["upstream_streaming"]) {
    std::string mode = NonEmptyString(root["upstream_streaming"], "upstream_streaming");
    if (mode == "always") {
      c.upstream_streaming = UpstreamStreaming::kAlways;
    } else if (mode == "as_requested") {
      c.upstream_streaming = UpstreamStreaming::kAsRequested;
    } else {
      Fail("upstream_streaming", "expected always or as_requested, got '" + mode + "'");
    }
  }
  if (root["tenants"]) c.tenants = ParseTenantsConfig(root["tenants"], "tenants");
  if (root["providers"]) c.providers = ParseProvidersConfig(root["providers"]);
  if (root["policies"]) c.policies = ParsePoliciesConfig(root["policies"]);
  if (root["tagging"]) c.tagging = ParseTaggingConfig(root["tagging"]);
  if (root["accounting"]) {
    try {
      c.accounting = accounting::ParseAccountingConfig(root["accounting"], base_dir);
    } catch (const accounting::ConfigError& e) {
      throw ConfigError(std::string("gateway config: ") + e.what());
    } catch (const YAML::Exception& e) {  // a key that is not a scalar, say
      throw ConfigError(std::string("gateway config: accounting: ") + e.what());
    }
  }
  if (const auto a = root["admission"]) {
    if (!a.IsMap()) Fail("admission", "expected a map with max_queue, queue_timeout_s");
    CheckKeys(a, "admission", ConfigSection("admission"));
    if (a["max_queue"]) {
      int v = Scalar<int>(a["max_queue"], "admission.max_queue", "an integer");
      if (v < 0) Fail("admission.max_queue", "must be >= 0 (0: refuse when full)");
      c.admission.max_queue = v;
    }
    if (a["queue_timeout_s"])
      c.admission.queue_timeout_s = DurationS(a["queue_timeout_s"], "admission.queue_timeout_s");
  }
  if (const auto b = root["backpressure"]) {
    if (!b.IsMap())
      Fail("backpressure", "expected a map with client_buffer_bytes, client_stall_timeout_s");
    CheckKeys(b, "backpressure", ConfigSection("backpressure"));
    if (b["client_buffer_bytes"]) {
      auto v = Scalar<long long>(b["client_buffer_bytes"], "backpressure.client_buffer_bytes",
                                 "an integer");
      if (v <= 0) Fail("backpressure.client_buffer_bytes", "must be > 0");
      c.backpressure.client_buffer_bytes = static_cast<size_t>(v);
    }
    if (b["client_stall_timeout_s"])
      c.backpressure.client_stall_timeout_s =
          DurationS(b["client_stall_timeout_s"], "backpressure.client_stall_timeout_s");
  }
  const YAML::Node pools = root["pools"];
  if (mode == ConfigMode::kKubernetes) {
    if (!c.policies.files.empty())
      Fail("policies.files",
           "not used with --kubernetes: InferencePolicy objects are the policies");
    if (!pools || (pools.IsSequence() && pools.size() == 0)) return c;
  }
  if (!c.providers.empty() && (!pools || (pools.IsSequence() && pools.size() == 0))) return c;
  if (!pools || !pools.IsSequence() || pools.size() == 0)
    Fail("pools", "expected a non-empty list of pools");
  std::set<std::string> names;
  for (size_t i = 0; i < pools.size(); ++i) {
    std::string where = "pools[" + std::to_string(i) + "]";
    PoolConfig pool = ParsePool(pools[i], where, mode);
    if (!names.insert(pool.name).second)
      Fail(where + ".name", "duplicate pool '" + pool.name + "'");
    c.pools.push_back(std::move(pool));
  }
  return c;
}

size_t EffectiveMaxBufferedBodyBytes(const GatewayConfig& config) {
  if (config.max_buffered_body_bytes) return *config.max_buffered_body_bytes;
  constexpr size_t kBodies = 8;  // config.h: the default is 8 x max_body_bytes
  const size_t max = std::numeric_limits<size_t>::max();
  return config.max_body_bytes > max / kBodies ? max : config.max_body_bytes * kBodies;
}

uint64_t EffectiveRouterSeed(const GatewayConfig& config, uint64_t drawn) {
  return config.router_seed.value_or(drawn);
}

double EffectiveDrainTimeoutS(const GatewayConfig& config,
                              std::optional<double> cli_drain_timeout_s) {
  return cli_drain_timeout_s ? *cli_drain_timeout_s : config.drain_timeout_s;
}

GatewayConfig LoadGatewayConfig(const std::string& path, ConfigMode mode) {
  std::ifstream in(path);
  if (!in) throw ConfigError("gateway config: cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  GatewayConfig c =
      ParseGatewayConfig(ss.str(), mode, std::filesystem::path(path).parent_path().string());
  ResolvePolicyPaths(c.policies, std::filesystem::path(path).parent_path().string());
  return c;
}

}  // namespace kinference::gateway
