// Gateway configuration: the YAML file given to `kinference gateway --config FILE`, parsed
// into a plain struct at start-up.
//
// Schema (every field but `pools` optional; defaults below):
//   listen: {address: 127.0.0.1, port: 8000}   # port 0: pick a free port
//     tls: {cert_file, key_file, client_ca_file, reload_interval_s: 10}  # HTTPS; see below
//   admin_listen: {address: 127.0.0.1, port: 9090}   # optional admin listener; see below
//   server_timeouts: {header_s: 5, keep_alive_s: 5, body_s: 60}   # real seconds; see below
//   log_format: text                            # text | json (--log-format overrides)
//   log_level: info                             # trace..off (--log-level overrides)
//   strategy: predicted-ttft                    # default routing strategy
//   scrape_interval_s: 1.0                      # model seconds between /metrics scrapes
//   time_scale: 1.0                             # router clock = RealClock(time_scale)
//   request_timeout_s: 600                      # model seconds for one upstream call
//   max_body_bytes: 33554432                    # larger request bodies get 413
//   max_buffered_body_bytes: 268435456          # all bodies being held at once; see below
//   max_connections: 4096                       # open client connections; see below
//   block_chars: 128                            # prefix-index block size (characters)
//   router_seed: 42                             # tie-break seed; default drawn at start-up
//   drain_timeout_s: 30                         # real seconds; see below
//   upstream_streaming: always                  # always | as_requested; see below
//   pools:
//     - {name: a, model: m, endpoints: ["http://127.0.0.1:8001", ...],
//        max_in_flight: 0}                      # per endpoint: N | 0 (no limit) | derive
//       kv_events: {...}                        # precise prefix index (below)
//       # api_key_env: VLLM_API_KEY | api_key_file: /run/secrets/vllm-key (optional; the
//       # key of `vllm serve --api-key`, sent as Authorization: Bearer; PoolConfig)
//   admission: {max_queue: 256, queue_timeout_s: 10}   # per pool; docs/reliability.md
//   backpressure: {client_buffer_bytes: 262144, client_stall_timeout_s: 30}
//   tenants: {...}                              # API-key tenants (gateway/front/tenants.h)
//   providers: [...]                            # external providers (gateway/upstream/provider.h)
//   policies: {files: [...], reload_interval_s: 2}   # InferencePolicy files
//   (config/policy_config.h) tagging: {pii: true, simple: true, ...}          # request taggers
//   (config/policy_config.h)
//   accounting: {...}                           # usage ledger, prices, budgets, limits
//   (accounting/config.h; relative paths against the config file's directory)
// `pools` may be empty or absent when `providers` is given.
// Times are model seconds: with time_scale K (endpoints running engine-sim --time-scale K)
// timers fire after t / K real seconds, so a K-times-faster run behaves like a real
// deployment at 1x. drain_timeout_s is not: it is real (wall-clock) seconds, never scaled;
// on the first SIGTERM/SIGINT in-flight requests get this long to finish before they are
// ended (0: at once). Precedence: `kinference gateway --drain-timeout-s S`, when given on
// the command line, overrides the config's drain_timeout_s, which overrides the default
// (30 s, Kubernetes' default terminationGracePeriodSeconds; EffectiveDrainTimeoutS).
// upstream_streaming: `always` (default) sends a client's non-streamed request to an
// OpenAI-shaped upstream (a local vLLM, an OpenAI provider) as a stream and rebuilds the
// non-streamed response from its chunks (api/openai/stream_assembler.h), so the gateway observes
// its first token (TTFT for the router and the stats); requests that a stream cannot answer
// faithfully (StreamsFaithfully) and Anthropic providers are sent as requested anyway.
// `as_requested` forwards every request with the client's own stream flag.
// kv_events (per pool, optional): follow each endpoint's vLLM KV events (docs/kv-events.md)
// and route its requests with the precise prefix index:
//   tokenizer: engine-sim | DIR     # how vLLM tokenizes this model: engine-sim's stand-in
//                                   # tokenizer and ChatML, or a Hugging Face model folder
//                                   # (tokenizer.json, config.json, chat_template.jinja or
//                                   # tokenizer_config.json's chat_template); required
//   endpoints: [tcp://host:port]    # each endpoint's publisher, in `endpoints` order;
//                                   # absent: asked from each endpoint's GET /kv_event_sources
//   replay_endpoints: [tcp://...]   # with `endpoints`: their replay sockets (optional)
//   topic: ""                       # with `endpoints`: vLLM's kv_events_config.topic
//   block_size: 0                   # engine block size; 0: learnt from BlockStored events
//   none_hash_seed: vllm-none-hash  # PYTHONHASHSEED when the vLLM processes set it
// router_seed: the seed of the router's tie-breaks (routing::RouterConfig::seed). Absent
// (the default), each process draws its own at start-up, so that gateway replicas that
// see the same candidates (shared, stale scrapes; a burst before any scrape shows it)
// break their ties differently instead of all sending to the same endpoint: with one
// fixed seed, 4 replicas behind a burst act as one router placing 4 copies of each
// choice (docs/routing.md, "Several gateway replicas"). Set it for reproducible runs.
// listen.tls: serve HTTPS with the PEM certificate chain `cert_file` and key `key_file`
// (both required); with `client_ca_file`, only clients presenting a certificate that
// verifies against that CA bundle are served (mutual TLS). The files are checked every
// `reload_interval_s` real seconds (0: never) and reloaded when they change, without a
// restart; a replacement that does not load is logged and the previous certificate stays
// (http/tls_server.h). Relative paths are relative to the working directory.
// server_timeouts (real seconds, never scaled; 0: no limit; http/server.h): `header_s`,
// a request's header must arrive within this after its first byte (a new connection's,
// TLS handshake included, after accept); `keep_alive_s`, an idle kept-alive connection is
// closed after this (uvicorn's default, as vLLM); `body_s`, a request's body must arrive
// within this after its header.
// max_buffered_body_bytes: request-body bytes the gateway holds at once across all
// connections, from a request's header until its response ends (http/server.h,
// http/body_budget.h); a request whose body does not fit is answered 503 (529
// overloaded_error on /v1/messages) with Retry-After and its connection closed, its body
// unread. Bodies of at most 64 KiB are never refused. Absent: 8 x max_body_bytes; 0: no
// limit; else at least max_body_bytes. max_connections: client connections open at once
// (0: no limit); at the limit new ones wait in the kernel's listen backlog. With both,
// what the bodies hold is at most max_buffered_body_bytes + max_connections x 64 KiB.
// admin_listen: a second, plain-HTTP listener serving /metrics, /health, /ready and
// /debug/* (docs/operations.md, "Admin port"). With it the API listener keeps the APIs,
// /health and /ready (load balancers probe the traffic port) and answers 404 on /metrics
// and /debug/*; without it (the default, as before) everything is on `listen`. The admin
// listener keeps serving while the gateway drains, so /ready shows 503 and the last
// metrics can be scraped until it stops.
// Every key, with type, default and meaning: config_keys.cc (docs/configuration.md).
// log_format / log_level: see common/logging.h; the command line's --log-format and
// --log-level override them, SIGUSR1 / SIGUSR2 step the level at run time.
// Several pools may serve the same or different models. Unknown keys are errors
// (they are almost always typos), so later features add their keys here.
//
// Errors: parsing throws ConfigError (start-up only, per the error policy) with a message
// naming the offending field, e.g. "pools[1].endpoints[0]: expected http://host:port".
//
// Thread-safety: plain data; the parser is a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "accounting/config.h"
#include "gateway/config/policy_config.h"
#include "gateway/front/tenants.h"
#include "gateway/upstream/provider.h"

namespace kinference::gateway {

struct EndpointAddress {
  std::string url;  // as written in the config
  std::string host;
  uint16_t port = 0;
};

struct KvEventsConfig {
  std::string tokenizer;                                 // "engine-sim" or a model folder
  std::vector<std::string> endpoints, replay_endpoints;  // empty: discovered
  std::string topic;
  int block_size = 0;
  std::string none_hash_seed = "vllm-none-hash";  // kv::kDefaultNoneHashSeed
};

struct PoolConfig {
  std::string name;
  std::string model;  // served model name (OpenAI `model`); may be empty for --kubernetes settings
  std::vector<EndpointAddress> endpoints;  // empty: --kubernetes settings (see ConfigMode)
  // Requests in flight per endpoint at most (admission/admission.h): a number, 0 (the
  // default) for no limit, or -1 (`derive`): learned from the endpoint's scrapes. Not
  // derived by default: a scrape taken while one long prefill holds the engine
  // (running 1, waiting > 0) would teach a concurrency of 1 that nothing raises again.
  int max_in_flight = 0;
  std::optional<KvEventsConfig> kv_events;
  // The key its vLLM replicas were started with (`vllm serve --api-key`), sent as
  // `Authorization: Bearer` on every request to them: named by an environment variable or
  // a file (at most one; neither: no key). Read once at start-up; never logged. With
  // --kubernetes, a settings entry's key goes to its InferencePool's Pods.
  std::string api_key_env;
  std::string api_key_file;
};

// Admission control (gateway/admission_gate.h): the wait queue of each pool.
struct AdmissionConfig {
  int max_queue = 256;          // waiters per pool; more are refused (429)
  double queue_timeout_s = 10;  // model seconds a request may wait for room
};

// Backpressure on streamed responses (exchange/exchange.h): when a client has more than
// client_buffer_bytes queued and not taken by its socket the upstream read pauses, and a
// client that takes nothing for client_stall_timeout_s (real seconds) is disconnected and
// its upstream request cancelled (vLLM aborts it). 256 KiB: a few thousand SSE events,
// far more than one client's socket buffers; 30 s: our choice, longer than any pause a
// live reader makes.
struct BackpressureConfig {
  size_t client_buffer_bytes = 256 * 1024;
  double client_stall_timeout_s = 30;
};

// How non-streamed client requests go upstream (see upstream_streaming above).
enum class UpstreamStreaming { kAlways, kAsRequested };

// HTTPS on the listener (listen.tls).
struct ListenTlsConfig {
  std::string cert_file;  // empty: plain HTTP
  std::string key_file;
  std::string client_ca_file;     // non-empty: client certificates required
  double reload_interval_s = 10;  // real seconds; 0: never reloaded
};

// Server-side timeouts (server_timeouts), real seconds; defaults in http/server.h.
struct ServerTimeoutsConfig {
  double header_s = 5;
  double keep_alive_s = 5;
  double body_s = 60;
};

// The admin listener (admin_listen); 9090: our choice, Prometheus' habit for metrics ports.
struct AdminListenConfig {
  std::string address = "127.0.0.1";
  uint16_t port = 9090;
};

struct GatewayConfig {
  std::string listen_address = "127.0.0.1";
  uint16_t listen_port = 8000;
  std::optional<AdminListenConfig> admin_listen;  // none: admin routes on `listen`
  ListenTlsConfig tls;
  ServerTimeoutsConfig server_timeouts;
  std::string log_format = "text";  // common/logging.h ParseLogFormat
  std::string log_level = "info";   // common/logging.h ParseLogLevel
  std::string strategy = "predicted-ttft";
  double scrape_interval_s = 1.0;
  double time_scale = 1.0;
  // Model seconds -> real seconds for timers.
  double RealSeconds(double model_seconds) const { return model_seconds / time_scale; }
  // 10 minutes: long generations on a busy replica take minutes; vLLM itself has no
  // request timeout, so this only bounds a hung upstream.
  double request_timeout_s = 600;
  size_t max_body_bytes = 32 * 1024 * 1024;
  // Request-body bytes held at once across all connections (0: no limit); none: 8 x
  // max_body_bytes (EffectiveMaxBufferedBodyBytes). 8 is our choice: the default 256 MiB
  // is a quarter of the Helm chart's 1 GiB gateway memory limit, eight bodies of the
  // largest size at once, tens of thousands of typical (few-KiB) chat bodies.
  std::optional<size_t> max_buffered_body_bytes;
  // Client connections open at once (0: no limit). 4096: our choice, sized so that what
  // the connections themselves may hold stays within the Helm chart's 1 GiB limit beside
  // the body cap: up to 64 KiB of an always-admitted small body, 64 KiB of pipelined
  // bytes in the read buffer (http/session.h) and an 8 KiB header (Beast's default
  // header limit) each, about 544 MiB in all; more clients wait in the listen backlog
  // (SOMAXCONN, 4096 since Linux 5.4).
  size_t max_connections = 4096;
  // Matches RouterConfig's default block size.
  size_t block_chars = 128;
  std::optional<uint64_t> router_seed;  // none: drawn at start-up (see above)
  // Real seconds (not scaled by time_scale) that a graceful drain waits for in-flight
  // requests; 30 s: Kubernetes' default terminationGracePeriodSeconds.
  double drain_timeout_s = 30;
  UpstreamStreaming upstream_streaming = UpstreamStreaming::kAlways;
  std::vector<PoolConfig> pools;
  TenantsConfig tenants;  // enabled == false: every request is tenant "default"
  std::vector<ProviderConfig> providers;
  PoliciesConfig policies;  // no files: no policies
  TaggingConfig tagging;
  AdmissionConfig admission;
  BackpressureConfig backpressure;
  // Usage ledger, prices, budgets and rate limits (accounting/config.h documents the
  // section's keys); enabled == false without the section: no ledger, no limits.
  accounting::AccountingConfig accounting;
};

// The drain grace to use: `cli_drain_timeout_s` when the flag was given on the command
// line (it overrides the config), else config.drain_timeout_s.
double EffectiveDrainTimeoutS(const GatewayConfig& config,
                              std::optional<double> cli_drain_timeout_s);

// The request-body cap in use: config.max_buffered_body_bytes when given, else 8 x
// config.max_body_bytes (saturating).
size_t EffectiveMaxBufferedBodyBytes(const GatewayConfig& config);

// The router's tie-break seed: config.router_seed when given, else `drawn` (the caller's
// draw from a random source, one per process).
uint64_t EffectiveRouterSeed(const GatewayConfig& config, uint64_t drawn);

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// kFile: pools (or providers) are required. kKubernetes (`gateway --kubernetes`): pools,
// providers, tenants and policies also come from the cluster, so `pools` may be absent
// (file pools and providers, when given, are served too) and `policies.files` is refused
// (InferencePolicy objects are the policies). There a pool entry without `endpoints`
// (and `model` optional) holds settings for the InferencePool of the same name:
// max_in_flight and kv_events (publishers discovered per Pod; no kv_events.endpoints).
enum class ConfigMode { kFile, kKubernetes };

// Parses YAML text. Throws ConfigError. `base_dir` resolves the accounting section's
// relative paths (ledger file, spool); "" leaves them relative to the working directory.
GatewayConfig ParseGatewayConfig(std::string_view yaml_text, ConfigMode mode = ConfigMode::kFile,
                                 const std::string& base_dir = "");
// Reads and parses a file. Throws ConfigError (also when the file cannot be read).
// Relative policies.files are resolved against the file's directory.
GatewayConfig LoadGatewayConfig(const std::string& path, ConfigMode mode = ConfigMode::kFile);

// Parses "http://host:port", optionally followed by "/" or "/v1" (other paths are refused:
// the gateway calls vLLM at its root). Throws ConfigError naming
// `field` when malformed.
EndpointAddress ParseEndpointUrl(const std::string& url, const std::string& field);

}  // namespace kinference::gateway
