#include "gateway/config/config.h"

#include <gtest/gtest.h>

#include <string>

#include "config_test_util.h"
#include "gateway/config/config_fields.h"

namespace kinference::gateway {
namespace {

std::string ErrorOf(const std::string& yaml) { return testing::ConfigErrorOf(yaml); }

TEST(GatewayConfig, ParsesFullConfig) {
  auto c = ParseGatewayConfig(R"(
listen: {address: 0.0.0.0, port: 9000}
strategy: round-robin
scrape_interval_s: 0.5
time_scale: 10
request_timeout_s: 30
max_body_bytes: 1024
block_chars: 64
pools:
  - name: a
    model: m1
    endpoints: ["http://127.0.0.1:8001", "http://localhost:8002/v1"]
  - name: b
    model: m2
    endpoints: ["http://10.0.0.1:80"]
)");
  EXPECT_EQ(c.listen_address, "0.0.0.0");
  EXPECT_EQ(c.listen_port, 9000);
  EXPECT_EQ(c.strategy, "round-robin");
  EXPECT_DOUBLE_EQ(c.scrape_interval_s, 0.5);
  EXPECT_DOUBLE_EQ(c.time_scale, 10);
  EXPECT_DOUBLE_EQ(c.request_timeout_s, 30);
  EXPECT_EQ(c.max_body_bytes, 1024u);
  EXPECT_EQ(c.block_chars, 64u);
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[0].name, "a");
  EXPECT_EQ(c.pools[0].model, "m1");
  ASSERT_EQ(c.pools[0].endpoints.size(), 2u);
  EXPECT_EQ(c.pools[0].endpoints[1].host, "localhost");
  EXPECT_EQ(c.pools[0].endpoints[1].port, 8002);
  EXPECT_EQ(c.pools[1].endpoints[0].host, "10.0.0.1");
  EXPECT_EQ(c.pools[1].endpoints[0].port, 80);
}

TEST(GatewayConfig, DefaultsApply) {
  auto c = ParseGatewayConfig("pools: [{name: p, model: m, endpoints: ['http://h:1']}]");
  EXPECT_EQ(c.listen_address, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 8000);
  EXPECT_EQ(c.strategy, "predicted-ttft");
  EXPECT_DOUBLE_EQ(c.scrape_interval_s, 1.0);
  EXPECT_DOUBLE_EQ(c.time_scale, 1.0);
  EXPECT_EQ(c.block_chars, 128u);
}

// Gateway replicas must not share a tie-break seed unless told to (config.h).
TEST(GatewayConfig, RouterSeedIsDrawnPerProcessUnlessConfigured) {
  const std::string pools = "pools: [{name: p, model: m, endpoints: ['http://h:1']}]\n";
  auto unset = ParseGatewayConfig(pools);
  EXPECT_FALSE(unset.router_seed.has_value());
  EXPECT_EQ(EffectiveRouterSeed(unset, 12345), 12345u);
  EXPECT_EQ(EffectiveRouterSeed(unset, 678), 678u);
  auto set = ParseGatewayConfig(pools + "router_seed: 42\n");
  ASSERT_TRUE(set.router_seed.has_value());
  EXPECT_EQ(EffectiveRouterSeed(set, 12345), 42u);
  EXPECT_NE(ErrorOf(pools + "router_seed: -1\n").find("router_seed"), std::string::npos);
  EXPECT_NE(ErrorOf(pools + "router_seed: x\n").find("router_seed"), std::string::npos);
}

TEST(GatewayConfig, ListenPortZeroAllowed) {
  auto c = ParseGatewayConfig(
      "listen: {port: 0}\npools: [{name: p, model: m, endpoints: ['http://h:1']}]");
  EXPECT_EQ(c.listen_port, 0);
}

TEST(GatewayConfig, ErrorsNameTheField) {
  const std::string pools = "pools: [{name: p, model: m, endpoints: ['http://h:1']}]\n";
  EXPECT_NE(ErrorOf("listen: {port: 8000}\n").find("pools"), std::string::npos);
  EXPECT_NE(ErrorOf(pools + "strategyy: x\n").find("strategyy: unknown field"), std::string::npos);
  EXPECT_NE(ErrorOf(pools + "listen: {port: 70000}\n").find("listen.port"), std::string::npos);
  EXPECT_NE(ErrorOf(pools + "listen: {port: abc}\n").find("listen.port"), std::string::npos);
  EXPECT_NE(ErrorOf(pools + "time_scale: 0\n").find("time_scale"), std::string::npos);
  EXPECT_NE(ErrorOf(pools + "scrape_interval_s: fast\n").find("scrape_interval_s"),
            std::string::npos);
  EXPECT_NE(ErrorOf("pools: [{name: p, model: m, endpoints: ['127.0.0.1:1']}]")
                .find("pools[0].endpoints[0]"),
            std::string::npos);
  EXPECT_NE(ErrorOf("pools: [{name: p, model: m, endpoints: ['http://h:x']}]")
                .find("pools[0].endpoints[0]"),
            std::string::npos);
  EXPECT_NE(ErrorOf("pools: [{name: p, endpoints: ['http://h:1']}]").find("pools[0].model"),
            std::string::npos);
  EXPECT_NE(ErrorOf("pools: [{name: p, model: m, endpoints: []}]").find("pools[0].endpoints"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools.substr(0, pools.size() - 2) +
                    ", {name: p, model: m2, endpoints: ['http://h:2']}]")
                .find("pools[1].name: duplicate"),
            std::string::npos);
  EXPECT_NE(ErrorOf("pools: [{name: p, model: m, endpoints: ['http://h:1'], extra: 1}]")
                .find("pools[0].extra"),
            std::string::npos);
  EXPECT_NE(ErrorOf("pools: [a: b").find("invalid YAML"), std::string::npos);
  EXPECT_NE(ErrorOf("- just\n- a list\n").find("top level"), std::string::npos);
}

// YAML allows a list or a map as a key; no config field is one, and such a key is a
// ConfigError naming where it was, not a yaml-cpp conversion exception.
TEST(GatewayConfig, NonScalarKeysAreConfigErrors) {
  const std::string pools = "pools: [{name: p, model: m, endpoints: ['http://h:1']}]\n";
  EXPECT_NE(ErrorOf(pools + "? [a]\n: 1\n").find("(top level): keys must be plain strings"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools + "listen: {{port: 1}: 2}\n").find("listen: keys must be plain strings"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools + "tenants: {[keys]: []}\n").find("tenants: keys must be plain strings"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools + "tenants: {keys: [{[sha256]: x}]}\n")
                .find("tenants.keys[0]: keys must be plain strings"),
            std::string::npos);
}

TEST(GatewayConfig, KubernetesModeNeedsNoPoolsAndRefusesPolicyFiles) {
  auto c = ParseGatewayConfig("listen: {port: 0}\n", ConfigMode::kKubernetes);
  EXPECT_TRUE(c.pools.empty());
  // File pools are still served beside the cluster's.
  c = ParseGatewayConfig("pools: [{name: p, model: m, endpoints: ['http://h:1']}]",
                         ConfigMode::kKubernetes);
  EXPECT_EQ(c.pools.size(), 1u);
  try {
    ParseGatewayConfig("policies: {files: [a.yaml]}\n", ConfigMode::kKubernetes);
    ADD_FAILURE() << "policies.files accepted with --kubernetes";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("policies.files"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ParseGatewayConfig("listen: {port: 0}\n"), ConfigError);  // file mode: pools
}

TEST(GatewayConfig, MissingFileIsAnError) {
  EXPECT_THROW(LoadGatewayConfig("/nonexistent/gateway.yaml"), ConfigError);
}

TEST(GatewayConfig, ExampleFileParses) {
  auto c = LoadGatewayConfig(std::string(KINFERENCE_SOURCE_DIR) + "/examples/gateway.yaml");
  ASSERT_EQ(c.pools.size(), 1u);
  EXPECT_EQ(c.pools[0].endpoints.size(), 3u);
}

// One URL parser (Boost.URL) serves pools, providers and the classifier.
TEST(ParseHttpUrl, SchemesPortsHostsAndPaths) {
  auto https = config_fields::ParseHttpUrl("https://api.example.com/v1/", "f");
  EXPECT_TRUE(https.tls);
  EXPECT_EQ(https.host, "api.example.com");
  EXPECT_EQ(https.port, 443);
  EXPECT_FALSE(https.explicit_port);
  EXPECT_EQ(https.path, "/v1/");
  auto v6 = config_fields::ParseHttpUrl("http://[::1]:8001", "f");
  EXPECT_FALSE(v6.tls);
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 8001);
  EXPECT_TRUE(v6.explicit_port);
  EXPECT_EQ(v6.path, "");
  EXPECT_EQ(config_fields::ParseHttpUrl("http://h", "f").port, 80);
  EXPECT_THROW(config_fields::ParseHttpUrl("ftp://h", "f"), ConfigError);
  EXPECT_THROW(config_fields::ParseHttpUrl("http://h:99999", "f"), ConfigError);
  EXPECT_THROW(config_fields::ParseHttpUrl("http://h:8000/x?y=1", "f"), ConfigError);
  EXPECT_THROW(config_fields::ParseHttpUrl("http://", "f"), ConfigError);
  // Pool endpoints keep their stricter form: http with an explicit port.
  EXPECT_EQ(ParseEndpointUrl("http://[::1]:8001", "f").host, "::1");
  EXPECT_THROW(ParseEndpointUrl("http://h", "f"), ConfigError);
  EXPECT_THROW(ParseEndpointUrl("https://h:443", "f"), ConfigError);
  EXPECT_THROW(ParseEndpointUrl("http://h:8000/other", "f"), ConfigError);  // would be dropped
  EXPECT_EQ(ParseEndpointUrl("http://h:8000/", "f").port, 8000);
  EXPECT_EQ(ParseEndpointUrl("http://h:8000/v1/", "f").port, 8000);
  EXPECT_NE(ErrorOf("pools: [{name: a, model: m, endpoints: [\"http://h:1\", \"http://h:1/\"]}]")
                .find("pools[0].endpoints[1]: duplicate endpoint h:1"),
            std::string::npos);
}

// Durations beyond a week (or infinite) are typos that overflow the timers' clocks.
TEST(GatewayConfig, DurationsAreFiniteAndAtMostAWeek) {
  const std::string pools = "pools: [{name: a, model: m, endpoints: [\"http://127.0.0.1:1\"]}]\n";
  EXPECT_NE(ErrorOf(pools + "request_timeout_s: 1e10").find("request_timeout_s: must be at most"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools + "scrape_interval_s: .inf").find("scrape_interval_s: must be finite"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools + "policies: {reload_interval_s: 1e300}")
                .find("policies.reload_interval_s: must be at most"),
            std::string::npos);
  EXPECT_NE(ErrorOf("providers: [{name: p, model: x, serves_model: m, base_url: "
                    "\"http://127.0.0.1:1\", api_key_env: HOME, timeout_s: 1e300}]")
                .find("providers[0].timeout_s: must be at most"),
            std::string::npos);
  EXPECT_EQ(ParseGatewayConfig(pools + "request_timeout_s: 604800").request_timeout_s, 604800);
}

// drain_timeout_s: real seconds, 0 allowed (end in-flight requests at once), default 30;
// --drain-timeout-s given on the command line overrides it (EffectiveDrainTimeoutS).
TEST(GatewayConfig, DrainTimeoutKeyAndCliPrecedence) {
  const std::string pools = "pools: [{name: a, model: m, endpoints: [\"http://127.0.0.1:1\"]}]\n";
  EXPECT_EQ(ParseGatewayConfig(pools).drain_timeout_s, 30);
  auto c = ParseGatewayConfig(pools + "drain_timeout_s: 12.5");
  EXPECT_EQ(c.drain_timeout_s, 12.5);
  EXPECT_EQ(ParseGatewayConfig(pools + "drain_timeout_s: 0").drain_timeout_s, 0);
  EXPECT_NE(ErrorOf(pools + "drain_timeout_s: -1").find("drain_timeout_s: must be >= 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools + "drain_timeout_s: 1e10").find("drain_timeout_s: must be at most"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools + "drain_timeout_s: soon").find("drain_timeout_s: expected a number"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pools + "drain_timeout: 5").find("drain_timeout: unknown field"),
            std::string::npos);
  // Precedence: the flag when given (even 0), else the config's value.
  EXPECT_EQ(EffectiveDrainTimeoutS(c, std::nullopt), 12.5);
  EXPECT_EQ(EffectiveDrainTimeoutS(c, 5.0), 5.0);
  EXPECT_EQ(EffectiveDrainTimeoutS(c, 0.0), 0.0);
  EXPECT_EQ(EffectiveDrainTimeoutS(GatewayConfig{}, std::nullopt), 30);
  // The example config documents the key.
  auto example = LoadGatewayConfig(std::string(KINFERENCE_SOURCE_DIR) + "/examples/gateway.yaml");
  EXPECT_EQ(example.drain_timeout_s, 30);
}

TEST(GatewayConfig, AdmissionBackpressureAndMaxInFlight) {
  GatewayConfig c = ParseGatewayConfig(
      "pools:\n"
      "  - {name: a, model: m, endpoints: ['http://h:1'], max_in_flight: 8}\n"
      "  - {name: b, model: m, endpoints: ['http://h:2'], max_in_flight: derive}\n"
      "  - {name: c, model: m, endpoints: ['http://h:3']}\n"
      "admission: {max_queue: 5, queue_timeout_s: 2.5}\n"
      "backpressure: {client_buffer_bytes: 4096, client_stall_timeout_s: 7}\n");
  EXPECT_EQ(c.pools[0].max_in_flight, 8);
  EXPECT_EQ(c.pools[1].max_in_flight, -1);
  EXPECT_EQ(c.pools[2].max_in_flight, 0);  // no limit unless configured
  EXPECT_EQ(c.admission.max_queue, 5);
  EXPECT_EQ(c.admission.queue_timeout_s, 2.5);
  EXPECT_EQ(c.backpressure.client_buffer_bytes, 4096u);
  EXPECT_EQ(c.backpressure.client_stall_timeout_s, 7);
  const std::string pool = "pools: [{name: p, model: m, endpoints: ['http://h:1']}]\n";
  EXPECT_NE(ErrorOf("pools: [{name: p, model: m, endpoints: ['http://h:1'], max_in_flight: -3}]")
                .find("max_in_flight: must be >= 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pool + "admission: {max_queue: -1}").find("admission.max_queue"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pool + "admission: {queue: 1}").find("admission.queue: unknown field"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pool + "backpressure: {client_buffer_bytes: 0}")
                .find("backpressure.client_buffer_bytes: must be > 0"),
            std::string::npos);
}

// max_buffered_body_bytes defaults to 8 x max_body_bytes (256 MiB), max_connections to
// 4096; 0 turns either limit off; a body cap below max_body_bytes is refused.
TEST(GatewayConfig, BodyCapAndMaxConnectionsDefaultsAndValidation) {
  const std::string pool = "pools: [{name: p, model: m, endpoints: ['http://h:1']}]\n";
  GatewayConfig c = ParseGatewayConfig(pool);
  EXPECT_FALSE(c.max_buffered_body_bytes.has_value());
  EXPECT_EQ(EffectiveMaxBufferedBodyBytes(c), 256u << 20);
  EXPECT_EQ(c.max_connections, 4096u);
  EXPECT_EQ(EffectiveMaxBufferedBodyBytes(GatewayConfig{}), 256u << 20);
  c = ParseGatewayConfig(pool + "max_body_bytes: 1000\n");
  EXPECT_EQ(EffectiveMaxBufferedBodyBytes(c), 8000u);  // follows max_body_bytes
  c = ParseGatewayConfig(pool +
                         "max_buffered_body_bytes: 5000\nmax_body_bytes: 1000\n"
                         "max_connections: 12\n");
  EXPECT_EQ(EffectiveMaxBufferedBodyBytes(c), 5000u);
  EXPECT_EQ(c.max_connections, 12u);
  c = ParseGatewayConfig(pool + "max_buffered_body_bytes: 0\nmax_connections: 0\n");
  EXPECT_EQ(EffectiveMaxBufferedBodyBytes(c), 0u);  // no limit
  EXPECT_EQ(c.max_connections, 0u);
  c = ParseGatewayConfig(pool + "max_buffered_body_bytes: 1000\nmax_body_bytes: 1000\n");
  EXPECT_EQ(EffectiveMaxBufferedBodyBytes(c), 1000u);
  EXPECT_NE(ErrorOf(pool + "max_buffered_body_bytes: 999\nmax_body_bytes: 1000\n")
                .find("max_buffered_body_bytes: must be at least max_body_bytes (1000)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pool + "max_buffered_body_bytes: 1048576\n")
                .find("max_buffered_body_bytes: must be at least max_body_bytes (33554432)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pool + "max_buffered_body_bytes: -1\n").find("max_buffered_body_bytes: must"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pool + "max_buffered_body_bytes: lots\n").find("max_buffered_body_bytes"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pool + "max_connections: -5\n").find("max_connections: must be >= 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf(pool + "max_connections: 1.5\n").find("max_connections"), std::string::npos);
  EXPECT_NE(ErrorOf(pool + "max_connection: 5\n").find("max_connection: unknown field"),
            std::string::npos);
}

}  // namespace
}  // namespace kinference::gateway

namespace kinference::gateway {
namespace {

TEST(GatewayConfig, ParsesKvEvents) {
  auto c = ParseGatewayConfig(R"(
pools:
  - name: a
    model: m
    endpoints: [http://127.0.0.1:8001, http://127.0.0.1:8002]
    kv_events:
      tokenizer: /models/qwen
      endpoints: [tcp://127.0.0.1:5557, tcp://127.0.0.1:5567]
      replay_endpoints: [tcp://127.0.0.1:5558, tcp://127.0.0.1:5568]
      topic: kv
      block_size: 128
      none_hash_seed: "0"
  - name: b
    model: m2
    endpoints: [http://127.0.0.1:8003]
    kv_events: {tokenizer: engine-sim}
)");
  ASSERT_TRUE(c.pools[0].kv_events);
  const KvEventsConfig& k = *c.pools[0].kv_events;
  EXPECT_EQ(k.tokenizer, "/models/qwen");
  EXPECT_EQ(k.endpoints[1], "tcp://127.0.0.1:5567");
  EXPECT_EQ(k.replay_endpoints[0], "tcp://127.0.0.1:5558");
  EXPECT_EQ(k.topic, "kv");
  EXPECT_EQ(k.block_size, 128);
  EXPECT_EQ(k.none_hash_seed, "0");
  ASSERT_TRUE(c.pools[1].kv_events);
  EXPECT_TRUE(c.pools[1].kv_events->endpoints.empty());  // discovered
  EXPECT_EQ(c.pools[1].kv_events->none_hash_seed, "vllm-none-hash");
}

TEST(GatewayConfig, KvEventsErrorsNameTheField) {
  const std::string head = "pools:\n  - {name: a, model: m, endpoints: [http://127.0.0.1:8001], ";
  EXPECT_NE(ErrorOf(head + "kv_events: {}}").find("pools[0].kv_events.tokenizer: missing"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "kv_events: {tokenizer: engine-sim, endpoints: [a, b]}}")
                .find("pools[0].kv_events.endpoints: expected a list of 1"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "kv_events: {tokenizer: engine-sim, endpoints: [http://x:1]}}")
                .find("pools[0].kv_events.endpoints[0]: expected tcp://host:port"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "kv_events: {tokenizer: engine-sim, topic: kv}}")
                .find("pools[0].kv_events.topic: needs endpoints"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "kv_events: {tokenizer: engine-sim, blok_size: 3}}").find("blok_size"),
            std::string::npos);
}

}  // namespace
}  // namespace kinference::gateway

namespace kinference::gateway {
namespace {

TEST(GatewayConfig, AccountingSectionParsedWithPathsBesideTheConfigFile) {
  auto c = ParseGatewayConfig(R"(
pools: [{name: a, model: m, endpoints: ["http://127.0.0.1:8001"]}]
accounting:
  ledger: {sqlite_path: usage.db}
  prices: [{provider: a, model: m, input: 1, output: 2}]
  limits: {tenants: {acme: {requests_per_minute: 60, on_limits_unavailable: fail_closed}}}
)",
                              ConfigMode::kFile, "/etc/kinference");
  ASSERT_TRUE(c.accounting.enabled);
  EXPECT_EQ(c.accounting.ledger.sqlite_path, "/etc/kinference/usage.db");
  ASSERT_TRUE(c.accounting.limits.For("acme"));
  EXPECT_EQ(c.accounting.limits.For("acme")->requests_per_minute, 60);
  EXPECT_EQ(c.accounting.limits.For("acme")->on_unavailable,
            accounting::OnUnavailable::kFailClosed);
  EXPECT_TRUE(c.accounting.prices.Lookup("a", "m").has_value());
}

TEST(GatewayConfig, NoAccountingSectionMeansNoLedgerAndNoLimits) {
  auto c =
      ParseGatewayConfig(R"(pools: [{name: a, model: m, endpoints: ["http://127.0.0.1:8001"]}])");
  EXPECT_FALSE(c.accounting.enabled);
}

TEST(GatewayConfig, AccountingErrorsNameTheField) {
  EXPECT_NE(ErrorOf(R"(
pools: [{name: a, model: m, endpoints: ["http://127.0.0.1:8001"]}]
accounting: {limits: {tenants: {acme: {requests_per_minute: -1}}}}
)")
                .find("accounting.limits.tenants.acme.requests_per_minute"),
            std::string::npos);
}

}  // namespace
}  // namespace kinference::gateway
