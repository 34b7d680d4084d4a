// External providers behind the gateway, OpenAI-compatible (OpenAI, Together, a hosted
// vLLM, ...) or Anthropic: their config, API key loading and circuit breaker. The gateway registers
// each provider as one endpoint of class "provider" with the router, so predicted-ttft
// learns its TTFT from observed history like any endpoint; providers have no /metrics,
// so the scraper skips them.
//
// Config (section `providers`, optional):
//   providers:
//     - name: openai                      # endpoint id "provider/openai"
//       model: gpt-4o-mini                # model name at the provider
//       serves_model: m                   # the gateway model name it can serve
//       base_url: https://api.openai.com/v1
//       api_key_env: OPENAI_API_KEY       # or api_key_file: /run/secrets/key (one of)
//       timeout_s: 600                    # model seconds; default request_timeout_s
//       retries_before_first_byte: 1      # default 1, as for local endpoints
//       circuit_breaker: {failures: 5, cooldown_s: 30}
//       ca_file: /etc/ssl/private-ca.pem  # optional; default: the system trust store
//       api: openai                       # or anthropic (default openai)
//       anthropic_version: "2023-06-01"   # api: anthropic only; the default shown
//       default_max_tokens: 4096          # api: anthropic only; when a request sets none
// For api: openai, base_url follows the OpenAI SDKs' convention: it ends before the API
// path, which the gateway appends without its leading "/v1" (POST /v1/chat/completions goes to
// <base_url>/chat/completions). https:// (TLS with certificate verification and SNI)
// or http://; default ports 443 and 80. Forwarded requests get `model` rewritten to the
// provider's and `Authorization: Bearer <key>`. The key never appears in the config
// text and is never logged.
// For api: anthropic, base_url follows the Anthropic SDKs' convention: it is the API
// root (https://api.anthropic.com) and requests go to POST <base_url>/v1/messages with
// `x-api-key: <key>` and `anthropic-version: <anthropic_version>` (Anthropic API
// reference "Overview" and "Versioning"); a base_url whose path ends in /v1 is a config
// error (it would call /v1/v1/messages); chat requests are translated
// (api/anthropic/upstream_*.h), /v1/messages requests are passed through natively.
// Such providers cannot serve /v1/completions (Anthropic has no equivalent): the
// gateway does not route completions to them (400 when no other endpoint serves it).
//
// Upstream 401/403 (the provider rejected the gateway's own key): the client gets 502,
// never the provider's auth error, and it counts as a breaker failure (exchange_relay.cc).
//
// Circuit breaker: after `failures` consecutive failures (transport error, TLS failure,
// timeout, a 5xx status, or a 401/403) the provider is marked unhealthy (never picked) for
// `cooldown_s` model seconds; then it is tried again (half-open): one success closes the
// breaker, one failure opens it again. Defaults 5 and 30 s are Envoy's outlier
// detection defaults (consecutive_5xx: 5, base_ejection_time: 30s; Envoy docs,
// "Outlier detection").
//
// Errors: parsing, key loading and the ca_file check throw ConfigError naming the field
// (start-up only).
//
// Thread-safety: ProviderConfig is plain data; CircuitBreaker is not thread-safe (the
// gateway uses it on its io_context thread); time is passed in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"

namespace YAML {
class Node;
}

namespace kinference::gateway {

// The API a provider speaks.
enum class ProviderApi { kOpenAi, kAnthropic };

struct ProviderConfig {
  std::string name;
  std::string model;         // name at the provider
  std::string serves_model;  // gateway model name
  std::string base_url;      // as written
  bool tls = true;           // https://
  std::string host;
  uint16_t port = 443;
  std::string base_path;  // e.g. "/v1"; no trailing slash
  std::string api_key_env;
  std::string api_key_file;
  double timeout_s = 0;  // 0: the gateway's request_timeout_s
  int retries_before_first_byte = 1;
  int breaker_failures = 5;
  double breaker_cooldown_s = 30;
  std::string ca_file;  // empty: system trust store
  // The CA bundle as PEM text instead of a file (Kubernetes mode: an InferenceProvider's
  // spec.caBundle from a Secret or ConfigMap); empty: ca_file, else the system trust store.
  std::string ca_pem;
  ProviderApi api = ProviderApi::kOpenAi;
  std::string anthropic_version = "2023-06-01";  // kDefaultAnthropicVersion
  int default_max_tokens = 4096;                 // tokens; kDefaultMaxTokens
};

// Parses the `providers` list. Throws ConfigError.
std::vector<ProviderConfig> ParseProvidersConfig(const YAML::Node& node);

// The key named by api_key_env or api_key_file (surrounding whitespace trimmed).
// `where` is e.g. "providers[0]". Throws ConfigError naming the field when the variable
// is unset or empty or the file cannot be read or is empty.
std::string LoadProviderApiKey(const ProviderConfig& provider, const std::string& where);
// The same for any `api_key_env` / `api_key_file` pair (exactly one non-empty), e.g. a
// local pool's key (config.h).
std::string LoadApiKey(const std::string& env, const std::string& file, const std::string& where);

// Checks ca_file (when set) at start-up, with OpenSSL as the TLS client will load it:
// throws ConfigError naming `where`.ca_file when the file is missing or unreadable or
// holds no PEM certificate (instead of every call failing its handshake later).
void CheckProviderCaFile(const ProviderConfig& provider, const std::string& where);

// The upstream target for an API path: base_path + path without its leading "/v1"
// (api: openai), base_path + "/v1/messages" (api: anthropic).
std::string ProviderTarget(const ProviderConfig& provider, const std::string& api_path);

class CircuitBreaker {
 public:
  CircuitBreaker(int failures, double cooldown_s) : failures_(failures), cooldown_s_(cooldown_s) {}
  // Records a failure at `now`; true when it opened the breaker.
  bool OnFailure(Seconds now);
  void OnSuccess() { consecutive_ = 0; }
  // Closes an open breaker whose cool-down ended by `now` (half-open); true when it did.
  bool MaybeClose(Seconds now);
  bool open() const { return open_; }
  Seconds open_until() const { return open_until_; }  // meaningful while open()
  int consecutive_failures() const { return consecutive_; }

 private:
  int failures_;
  double cooldown_s_;
  int consecutive_ = 0;
  bool open_ = false;
  Seconds open_until_ = 0;
};

}  // namespace kinference::gateway
