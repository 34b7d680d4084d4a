#include "gateway/config/config_keys.h"

#include <array>
#include <vector>

#include "accounting/config_keys.h"

namespace kinference::gateway {
namespace {

// Defaults as config.h and the section headers state them (the parsers apply them).
constexpr std::array kKeys = std::to_array<ConfigKey>({
    {"listen", "map", "", "The API listener (OpenAI and Anthropic routes)."},
    {"listen.address", "string", "127.0.0.1", "Address to listen on (0.0.0.0 in a container)."},
    {"listen.port", "integer 0..65535", "8000",
     "Port; 0 picks a free one (printed as `gateway listening on HOST:PORT`)."},
    {"listen.tls", "map", "",
     "Serve HTTPS; reloaded when the files change (src/http/tls_server.h)."},
    {"listen.tls.cert_file", "path", "", "PEM certificate chain; required with tls."},
    {"listen.tls.key_file", "path", "", "PEM private key; required with tls."},
    {"listen.tls.client_ca_file", "path", "",
     "With it, only clients whose certificate verifies against this CA bundle are served (mutual "
     "TLS)."},
    {"listen.tls.reload_interval_s", "real seconds", "10",
     "How often the files are checked for a change (0: never)."},
    {"admin_listen", "map", "",
     "A second, plain-HTTP listener for /metrics, /health, /ready and /debug/*; with it the API "
     "listener no longer serves /metrics and /debug/* (docs/operations.md, \"Admin port\"). "
     "Absent: everything on `listen`."},
    {"admin_listen.address", "string", "127.0.0.1", "Address of the admin listener."},
    {"admin_listen.port", "integer 0..65535", "9090",
     "Port of the admin listener; 0 picks a free one (printed as `gateway admin listening on "
     "HOST:PORT`)."},
    {"server_timeouts", "map", "",
     "Client-side timeouts in real seconds, never scaled; 0: no limit (src/http/server.h)."},
    {"server_timeouts.header_s", "real seconds", "5",
     "A request's header must arrive within this after its first byte."},
    {"server_timeouts.keep_alive_s", "real seconds", "5",
     "An idle kept-alive connection is closed after this."},
    {"server_timeouts.body_s", "real seconds", "60",
     "A request's body must arrive within this after its header."},
    {"log_format", "text | json", "text",
     "Log line format; --log-format overrides (src/common/logging.h)."},
    {"log_level", "trace | debug | info | warn | error | critical | off", "info",
     "Log level; --log-level overrides, SIGUSR1/SIGUSR2 step it."},
    {"strategy", "string", "predicted-ttft", "Default routing strategy (docs/routing.md)."},
    {"scrape_interval_s", "model seconds", "1.0",
     "Between two scrapes of each endpoint's /metrics."},
    {"time_scale", "number > 0", "1.0", "Model seconds per real second (engine-sim --time-scale)."},
    {"request_timeout_s", "model seconds", "600", "Bound of one upstream call."},
    {"max_body_bytes", "bytes", "33554432", "Larger request bodies get 413."},
    {"max_buffered_body_bytes", "bytes", "8 x max_body_bytes",
     "Request-body bytes held at once across connections; 0: no limit (docs/reliability.md)."},
    {"max_connections", "integer", "4096", "Client connections open at once; 0: no limit."},
    {"block_chars", "integer", "128", "Prefix-index block size in characters."},
    {"router_seed", "integer", "drawn at start-up",
     "Seed of the router's tie-breaks; set it for reproducible runs."},
    {"drain_timeout_s", "real seconds", "30",
     "After SIGTERM, in-flight requests get this long; --drain-timeout-s overrides."},
    {"upstream_streaming", "always | as_requested", "always",
     "always: non-streamed requests go upstream as streams so the gateway sees their first token."},
    {"pools[]", "list", "",
     "Local vLLM pools; required unless providers are given or --kubernetes."},
    {"pools[].name", "string", "",
     "Pool name (policies, prices and metrics use it); with --kubernetes an entry without "
     "endpoints holds settings for the InferencePool of this name."},
    {"pools[].model", "string", "", "Served model name; required with endpoints."},
    {"pools[].endpoints", "list of URLs", "", "http://host:port of each vLLM replica."},
    {"pools[].max_in_flight", "integer | derive", "0",
     "Requests in flight per endpoint; 0: no limit; derive: learned from /metrics "
     "(docs/reliability.md)."},
    {"pools[].api_key_env", "string", "",
     "Environment variable holding the key of `vllm serve --api-key`."},
    {"pools[].api_key_file", "path", "", "File holding that key (at most one of the two)."},
    {"pools[].kv_events", "map", "",
     "Follow each endpoint's KV-cache events and route by the precise prefix index "
     "(docs/kv-events.md)."},
    {"pools[].kv_events.tokenizer", "engine-sim | folder", "",
     "How vLLM tokenizes the model: engine-sim, or a Hugging Face model folder; required."},
    {"pools[].kv_events.endpoints", "list of tcp://host:port", "discovered",
     "Each endpoint's publisher, in endpoints order; absent: from GET /kv_event_sources."},
    {"pools[].kv_events.replay_endpoints", "list of tcp://host:port", "",
     "Their replay sockets (with endpoints)."},
    {"pools[].kv_events.topic", "string", "", "vLLM's kv_events_config.topic (with endpoints)."},
    {"pools[].kv_events.block_size", "integer", "0",
     "Engine block size; 0: learned from BlockStored events."},
    {"pools[].kv_events.none_hash_seed", "string", "vllm-none-hash",
     "PYTHONHASHSEED of the vLLM processes, when they set it."},
    {"admission", "map", "", "Per-pool wait queue when every endpoint is at max_in_flight."},
    {"admission.max_queue", "integer", "256",
     "Waiters per pool; more are refused (429); 0: refuse when full."},
    {"admission.queue_timeout_s", "model seconds", "10", "How long a request may wait for room."},
    {"backpressure", "map", "", "Streamed responses to slow clients."},
    {"backpressure.client_buffer_bytes", "bytes", "262144",
     "Above this queued for a client, the upstream read pauses."},
    {"backpressure.client_stall_timeout_s", "real seconds", "30",
     "A client taking nothing this long is disconnected and its upstream request cancelled."},
    {"tenants", "map", "",
     "API-key tenants; absent: every request is tenant default (docs/providers.md)."},
    {"tenants.keys[]", "list", "", "The tenants' keys."},
    {"tenants.keys[].sha256", "64 hex digits", "",
     "SHA-256 of the key (`echo -n \"$KEY\" \\| sha256sum`); required."},
    {"tenants.keys[].tenant", "string", "", "The tenant it identifies; required."},
    {"tenants.anonymous_tenant", "string", "",
     "Tenant of requests without a key; absent: those get 401."},
    {"tenants.trust_tenant_header", "boolean", "false",
     "Honour tenant_header (only behind a trusted auth proxy)."},
    {"tenants.tenant_header", "string", "x-kinference-tenant", "The header a trusted proxy sets."},
    {"providers[]", "list", "",
     "External OpenAI-compatible or Anthropic providers (docs/providers.md)."},
    {"providers[].name", "string", "", "Endpoint id provider/<name>; required."},
    {"providers[].model", "string", "", "Model name at the provider; required."},
    {"providers[].serves_model", "string", "", "The gateway model name it serves; required."},
    {"providers[].base_url", "URL", "",
     "https://api.openai.com/v1 (OpenAI SDK convention) or https://api.anthropic.com; required."},
    {"providers[].api_key_env", "string", "",
     "Environment variable holding the key (exactly one of the two)."},
    {"providers[].api_key_file", "path", "", "File holding the key."},
    {"providers[].timeout_s", "model seconds", "request_timeout_s", "Bound of one call."},
    {"providers[].retries_before_first_byte", "integer 0..10", "1",
     "Retries of a call that failed before its first byte."},
    {"providers[].circuit_breaker", "map", "",
     "Consecutive failures open the breaker (Envoy's outlier-detection defaults)."},
    {"providers[].circuit_breaker.failures", "integer", "5", "Consecutive failures that open it."},
    {"providers[].circuit_breaker.cooldown_s", "model seconds", "30", "How long it stays open."},
    {"providers[].ca_file", "path", "system trust store", "CA bundle to verify the provider."},
    {"providers[].api", "openai | anthropic", "openai", "The API the provider speaks."},
    {"providers[].anthropic_version", "string", "2023-06-01",
     "anthropic-version header (api: anthropic)."},
    {"providers[].default_max_tokens", "integer", "4096",
     "max_tokens for translated requests that set none (api: anthropic)."},
    {"policies", "map", "", "InferencePolicy files (docs/policy.md); refused with --kubernetes."},
    {"policies.files", "list of paths", "", "Policy files, relative to the config file's folder."},
    {"policies.reload_interval_s", "real seconds", "2",
     "How often the files are polled; 0: never, else >= 0.1."},
    {"policies.debug_admin_tenants", "list of strings", "",
     "Tenants that see every tenant's decisions at GET /debug/decisions."},
    {"tagging", "map", "", "Request taggers run before policies (src/policy/taggers.h)."},
    {"tagging.pii", "boolean", "true", "The built-in PII tagger."},
    {"tagging.simple", "boolean", "true", "The built-in simple tagger."},
    {"tagging.simple_max_prompt_tokens", "integer", "256",
     "Largest prompt the simple tagger tags."},
    {"tagging.trusted_tag_header", "boolean", "false",
     "Honour x-kinference-tags (only behind a trusted proxy)."},
    {"tagging.classifier", "map", "", "An external HTTP classifier."},
    {"tagging.classifier.url", "URL", "", "http(s)://host[:port][/path]; required."},
    {"tagging.classifier.timeout_s", "real seconds in (0, 60]", "0.2", "Bound of the whole call."},
    {"tagging.classifier.name", "string", "classifier", "Tagger name reported on failure."},
});

}  // namespace

std::span<const ConfigKey> GatewayConfigKeys() {
  static const std::vector<ConfigKey> all = [] {
    std::vector<ConfigKey> v(kKeys.begin(), kKeys.end());
    auto acct = accounting::AccountingConfigKeys();
    v.insert(v.end(), acct.begin(), acct.end());
    return v;
  }();
  return all;
}

std::set<std::string> ConfigSection(std::string_view section) {
  return KeysUnder(GatewayConfigKeys(), section);
}

std::string GatewayConfigReference() {
  return ConfigReferenceMarkdown(
      GatewayConfigKeys(), "Gateway configuration reference",
      "Every key of the file given to `kinference gateway --config FILE`, generated by "
      "`kinference gateway --config-reference` from the table the parser itself uses "
      "(src/gateway/config/config_keys.cc, src/accounting/config_keys.cc): a key missing here "
      "is refused as an unknown field. Do not edit by hand; tests/docs checks this file against "
      "the printout. `pools[]` is a list of maps; `<tenant>` is a key of your choice. Model "
      "seconds are divided by time_scale; real seconds never are. Worked examples: "
      "examples/gateway.yaml, docs/kv-events.md, docs/accounting.md.");
}

}  // namespace kinference::gateway
