// `kinference gateway --kubernetes` against a real API server: InferencePool Pods (loopback
// pod IPs where engine-sims listen) become endpoints once Ready, with the model each
// answers at /v1/models; flipping Ready moves traffic; deleting a Pod removes it; an
// InferencePolicy applied and edited with kubectl changes routing; an InferenceTenant's
// Secret keys authenticate and its access list limits models; a config pool entry's
// settings (KV events, max_in_flight) follow the Pods of that InferencePool; two replicas
// each follow the cluster with their own watches.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include "common/tokenizer.h"
#include "http/client.h"
#include "k8s/resource.h"
#include "k8s_env/testenv.h"
#include "testing/launch.h"
#include "testing/services.h"

namespace kinference {
namespace {

namespace json = boost::json;
using testing::ChildProcess;
using testing::TestEnv;
using testing::WaitFor;

constexpr const char* kModel = "sim-model";

std::string PoolYaml(const std::string& name, const std::string& app, uint16_t port) {
  return "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata:\n  name: " +
         name + "\nspec:\n  selector:\n    matchLabels:\n      app: " + app +
         "\n  targetPorts:\n  - number: " + std::to_string(port) +
         "\n  endpointPickerRef:\n    name: unused-epp\n    port:\n      number: 9002\n";
}

class GatewayEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = TestEnv::Get();
    ASSERT_NE(env_, nullptr);
    env_->InstallCrds();
    port_ = testing::FreePort();
  }
  void TearDown() override {
    if (gateway_ && HasFailure()) std::cerr << "gateway log:\n" << gateway_->Output() << "\n";
  }

  // An engine-sim "pod" listening on `ip`:port_.
  void StartSim(const std::string& ip) {
    auto p = testing::LaunchKinference({"engine-sim", "--host", ip, "--port", std::to_string(port_),
                                        "--time-scale", "50", "--served-model-name", kModel});
    ASSERT_TRUE(p);
    sims_.push_back(std::move(p));
  }

  // kubectl apply -n NS -f - of `yaml`.
  void ApplyIn(const std::string& ns, const std::string& yaml) {
    auto r = env_->k8s().Kubectl({"apply", "-n", ns, "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  static std::string Tenant(const std::string& access) {
    return "apiVersion: kinference.io/v1alpha1\nkind: InferenceTenant\nmetadata:\n  name: acme\n"
           "spec:\n  apiKeys:\n  - secretRef: {name: acme-keys, key: key}\n  access:\n    " +
           access + "\n";
  }

  void CreatePod(const std::string& ns, const std::string& name, const std::string& app) {
    std::string body = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                       R"(","labels":{"app":")" + app +
                       R"("}},"spec":{"containers":[{"name":"vllm","image":"vllm/vllm-openai"}]}})";
    auto r = env_->Call("POST", k8s::CollectionPath(k8s::kPods, ns), body);
    ASSERT_TRUE(r.ok() && r->ok()) << (r.ok() ? k8s::ApiErrorMessage(*r) : r.status().message());
  }

  // What a kubelet reports: phase Running, the pod IP, Ready and ContainersReady.
  void SetReady(const std::string& ns, const std::string& name, const std::string& ip, bool ready) {
    const char* s = ready ? "True" : "False";
    std::string body = R"({"status":{"phase":"Running","podIP":")" + ip + R"(","podIPs":[{"ip":")" +
                       ip + R"("}],"conditions":[{"type":"Ready","status":")" + s +
                       R"("},{"type":"ContainersReady","status":")" + s + R"("}]}})";
    auto r = env_->Call("PATCH", k8s::ObjectPath(k8s::kPods, ns, name) + "/status", body,
                        "application/merge-patch+json");
    ASSERT_TRUE(r.ok() && r->ok()) << (r.ok() ? k8s::ApiErrorMessage(*r) : r.status().message());
  }

  void StartGateway(const std::string& ns, const std::string& extra_config = "") {
    std::string path = env_->dir() + "/gateway-" + ns + ".yaml";
    std::ofstream(path) << "listen: {address: 127.0.0.1, port: 0}\nscrape_interval_s: 1\n"
                        << "time_scale: 50\n"
                        << extra_config;
    gateway_ = testing::LaunchKinference({"gateway", "--kubernetes", "--kubeconfig",
                                          env_->kubeconfig(), "--namespace", ns, "--config", path});
    ASSERT_TRUE(gateway_);
  }

  http::Response Call(const std::string& method, const std::string& target,
                      const std::string& body = "", http::Headers headers = {}) {
    if (!gateway_) return http::Response{};  // its start failed (reported)
    http::ClientRequest r;
    r.method = method;
    r.port = via_ ? via_->port() : gateway_->port();
    r.target = target;
    r.body = body;
    r.headers = std::move(headers);
    r.header_timeout_s = 60;  // hang guard only
    auto res = http::FetchSync(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : http::Response{};
  }

  // The endpoint a round-robin chat completion went to ("" when it failed).
  std::string ChatEndpoint(http::Headers headers = {}) {
    headers.Add("x-kinference-strategy", "round-robin");
    auto r = Call("POST", "/v1/chat/completions",
                  std::string(R"({"model":")") + kModel +
                      R"(","messages":[{"role":"user","content":"hi"}],"max_tokens":2})",
                  std::move(headers));
    if (r.status != 200) return "";
    return std::string(r.headers.Find("x-kinference-endpoint"));
  }

  // The endpoints `n` round-robin requests went to.
  std::set<std::string> Endpoints(int n, const http::Headers& headers = {}) {
    std::set<std::string> out;
    for (int i = 0; i < n; ++i) out.insert(ChatEndpoint(headers));
    return out;
  }

  // Seconds until `n` consecutive requests went only to `want` (-1: not within 30 s).
  double SecondsUntilOnly(const std::set<std::string>& want, int n = 4) {
    auto start = std::chrono::steady_clock::now();
    bool ok = WaitFor([&] { return Endpoints(n) == want; }, 30);
    if (!ok) return -1;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  TestEnv* env_ = nullptr;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<ChildProcess>> sims_;
  std::unique_ptr<ChildProcess> gateway_;
  ChildProcess* via_ = nullptr;  // when set, Call goes to this gateway instead
};

TEST_F(GatewayEnvTest, ReadyPodsOfAnInferencePoolAreEndpointsAndReadinessMovesTraffic) {
  std::string ns = env_->NewNamespace("gw-pods");
  StartSim("127.0.0.2");
  StartSim("127.0.0.3");
  std::string out;
  ApplyIn(ns, PoolYaml("sims", "sim", port_));
  CreatePod(ns, "sim-a", "sim");
  CreatePod(ns, "sim-b", "sim");
  CreatePod(ns, "other", "other");  // not selected by the pool
  StartGateway(ns);
  // Not Ready yet: no endpoint, the model is unknown.
  auto models = Call("GET", "/v1/models");
  EXPECT_EQ(models.body.find(kModel), std::string::npos) << models.body;
  SetReady(ns, "sim-a", "127.0.0.2", true);
  SetReady(ns, "sim-b", "127.0.0.3", true);
  SetReady(ns, "other", "127.0.0.4", true);
  // The model comes from each pod's /v1/models.
  ASSERT_TRUE(
      WaitFor([&] { return Call("GET", "/v1/models").body.find(kModel) != std::string::npos; }, 30))
      << Call("GET", "/v1/models").body;
  EXPECT_GE(SecondsUntilOnly({"sims/sim-a", "sims/sim-b"}), 0);

  // Ready False on sim-a: new requests go to sim-b only.
  SetReady(ns, "sim-a", "127.0.0.2", false);
  double moved_s = SecondsUntilOnly({"sims/sim-b"});
  EXPECT_GE(moved_s, 0);
  std::cout << "not-Ready took effect after " << moved_s << " s (requests included)\n";
  // Ready again: both.
  SetReady(ns, "sim-a", "127.0.0.2", true);
  EXPECT_GE(SecondsUntilOnly({"sims/sim-a", "sims/sim-b"}), 0);
  // Deleting sim-b removes it.
  auto del = env_->Call("DELETE", k8s::ObjectPath(k8s::kPods, ns, "sim-b"));
  ASSERT_TRUE(del.ok() && del->ok());
  double deleted_s = SecondsUntilOnly({"sims/sim-a"});
  EXPECT_GE(deleted_s, 0);
  std::cout << "deletion took effect after " << deleted_s << " s (requests included)\n";
  auto metrics = Call("GET", "/metrics").body;
  // Its health gauge goes (request counters keep what it served).
  EXPECT_EQ(metrics.find("kinference_endpoint_healthy{endpoint=\"sims/sim-b\"}"), std::string::npos)
      << "a deleted pod's health series stays";
  EXPECT_NE(metrics.find("kinference_endpoint_healthy{endpoint=\"sims/sim-a\"}"), std::string::npos)
      << metrics;
  // The pool deleted: no endpoint, the model is gone, requests get 404 in OpenAI's shape.
  ASSERT_EQ(env_->Kubectl({"delete", "-n", ns, "inferencepool", "sims"}, &out), 0) << out;
  ASSERT_TRUE(WaitFor(
      [&] { return Call("GET", "/v1/models").body.find(kModel) == std::string::npos; }, 30));
}

TEST_F(GatewayEnvTest, PoliciesAndTenantsFromTheClusterApplyLive) {
  std::string ns = env_->NewNamespace("gw-policy");
  StartSim("127.0.0.5");
  StartSim("127.0.0.6");
  std::string out;
  // Two pools of one pod each, serving the same model.
  ApplyIn(ns, PoolYaml("fast", "fast", port_) + "---\n" + PoolYaml("slow", "slow", port_));
  CreatePod(ns, "fast-0", "fast");
  CreatePod(ns, "slow-0", "slow");
  SetReady(ns, "fast-0", "127.0.0.5", true);
  SetReady(ns, "slow-0", "127.0.0.6", true);
  StartGateway(ns, "tenants:\n  anonymous_tenant: anonymous\n");
  EXPECT_GE(SecondsUntilOnly({"fast/fast-0", "slow/slow-0"}), 0);

  // A policy applied with kubectl: only the pool "slow".
  auto policy = [](const std::string& pool) {
    return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata:\n  name: "
           "pin\nspec:\n  constraints:\n    include:\n      pools: [" +
           pool + "]\n";
  };
  ApplyIn(ns, policy("slow"));
  EXPECT_GE(SecondsUntilOnly({"slow/slow-0"}), 0);
  // Edited: only "fast".
  ApplyIn(ns, policy("fast"));
  EXPECT_GE(SecondsUntilOnly({"fast/fast-0"}), 0);
  // Deleted: both again.
  ASSERT_EQ(env_->Kubectl({"delete", "-n", ns, "inferencepolicy", "pin"}, &out), 0) << out;
  EXPECT_GE(SecondsUntilOnly({"fast/fast-0", "slow/slow-0"}), 0);

  // A tenant whose key is in a Secret, allowed the pool "slow" only.
  ASSERT_EQ(env_->Kubectl({"create", "secret", "generic", "acme-keys", "-n", ns,
                           "--from-literal=key=sk-acme-1"},
                          &out),
            0)
      << out;
  ApplyIn(ns, Tenant("pools: [slow]"));
  http::Headers acme{{{"authorization", "Bearer sk-acme-1"}}};
  ASSERT_TRUE(
      WaitFor([&] { return Endpoints(4, acme) == std::set<std::string>{"slow/slow-0"}; }, 30));
  // A wrong key is refused, anonymous requests still use both pools.
  http::Headers wrong{{{"authorization", "Bearer sk-wrong"}}};
  auto refused = Call("POST", "/v1/chat/completions",
                      std::string(R"({"model":")") + kModel +
                          R"(","messages":[{"role":"user","content":"hi"}],"max_tokens":2})",
                      wrong);
  EXPECT_EQ(refused.status, 401) << refused.body;
  EXPECT_EQ(Endpoints(4), (std::set<std::string>{"fast/fast-0", "slow/slow-0"}));
  // access.models without the model: 403 for acme.
  ApplyIn(ns, Tenant("models: [another-model]"));
  int status = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = Call("POST", "/v1/chat/completions",
                      std::string(R"({"model":")") + kModel +
                          R"(","messages":[{"role":"user","content":"hi"}],"max_tokens":2})",
                      acme);
        status = r.status;
        return r.status == 403;
      },
      30))
      << status;
  // The key rotated in the Secret: the old key stops working.
  ASSERT_EQ(env_->Kubectl({"delete", "secret", "acme-keys", "-n", ns}, &out), 0) << out;
  ASSERT_EQ(env_->Kubectl({"create", "secret", "generic", "acme-keys", "-n", ns,
                           "--from-literal=key=sk-acme-2"},
                          &out),
            0)
      << out;
  http::Headers rotated{{{"authorization", "Bearer sk-acme-2"}}};
  ASSERT_TRUE(WaitFor(
      [&] {
        return Call("GET", "/v1/models", "", acme).status == 401 &&
               Call("GET", "/v1/models", "", rotated).status == 200;
      },
      30));
}

// The config file's entry for the InferencePool "kvs" (no endpoints: settings only) turns
// on KV events and an in-flight limit: each Ready Pod's publisher is discovered and
// followed, its limit registered with admission control, and both go with the Pod.
TEST_F(GatewayEnvTest, PoolSettingsFollowThePodsKvEventsAndAdmission) {
  std::string ns = env_->NewNamespace("gw-kv");
  // An engine-sim "pod" publishing KV events on its own IP (ports chosen by the sim and
  // told at /kv_event_sources, as vLLM does).
  const std::string ip = "127.0.0.9";
  std::string kv = R"({"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://)" +
                   ip + R"(:0", "replay_endpoint": "tcp://)" + ip + R"(:0", "topic": "kv"})";
  auto sim = testing::LaunchKinference({"engine-sim", "--host", ip, "--port", std::to_string(port_),
                                        "--time-scale", "50", "--served-model-name", kModel,
                                        "--kv-events-config", kv});
  ASSERT_TRUE(sim);
  ApplyIn(ns, PoolYaml("kvs", "kv", port_));
  CreatePod(ns, "kv-a", "kv");
  SetReady(ns, "kv-a", ip, true);
  StartGateway(ns,
               "pools:\n- name: kvs\n  max_in_flight: 3\n  kv_events: {tokenizer: engine-sim}\n");
  auto series = [&](const std::string& name) -> double {
    std::string body = Call("GET", "/metrics").body;
    std::string key = name + "{endpoint=\"kvs/kv-a\"} ";
    size_t at = body.find(key);
    return at == std::string::npos ? -1 : std::stod(body.substr(at + key.size()));
  };
  ASSERT_TRUE(WaitFor([&] { return series("kinference_kv_events_live") == 1; }, 30))
      << Call("GET", "/metrics").body;
  // Admission control knows the Pod with the pool's limit.
  auto debug = json::parse(Call("GET", "/debug/endpoints").body).at("endpoints").as_array();
  ASSERT_EQ(debug.size(), 1u);
  EXPECT_EQ(debug[0].at("id").as_string(), "kvs/kv-a");
  EXPECT_EQ(debug[0].at("max_in_flight").to_number<int>(), 3);
  // A request through the gateway fills the engine's cache; its blocks arrive as events
  // and the same prompt again is matched by the precise index.
  const std::string prompt = SyntheticText(/*seed=*/91, 600);  // 37 blocks of 16 tokens
  const std::string body = json::serialize(
      json::object{{"model", kModel},
                   {"messages", json::array{json::object{{"role", "user"}, {"content", prompt}}}},
                   {"max_tokens", 2}});
  ASSERT_EQ(Call("POST", "/v1/chat/completions", body).status, 200);
  ASSERT_TRUE(WaitFor([&] { return series("kinference_kv_index_blocks") > 0; }, 30));
  auto again = Call("POST", "/v1/chat/completions", body);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.headers.Find("x-kinference-prefix-index"), "precise");

  // Not Ready: the endpoint, its feed and its series go; Ready again: followed again.
  SetReady(ns, "kv-a", ip, false);
  ASSERT_TRUE(WaitFor([&] { return series("kinference_kv_events_live") == -1; }, 30));
  EXPECT_EQ(series("kinference_endpoint_healthy"), -1);
  EXPECT_EQ(json::parse(Call("GET", "/debug/endpoints").body).at("endpoints").as_array().size(),
            0u);
  SetReady(ns, "kv-a", ip, true);
  ASSERT_TRUE(WaitFor([&] { return series("kinference_kv_events_live") == 1; }, 30))
      << gateway_->Output();
  EXPECT_EQ(Call("POST", "/v1/chat/completions", body).status, 200);
}

// Two gateway replicas, each with its own watches (active-active, as the chart runs them):
// both route to the pool's Ready Pods, and a readiness change reaches each on its own.
TEST_F(GatewayEnvTest, TwoReplicasEachFollowTheClusterOnTheirOwn) {
  std::string ns = env_->NewNamespace("gw-replicas");
  StartSim("127.0.0.10");
  StartSim("127.0.0.11");
  ApplyIn(ns, PoolYaml("sims", "sim", port_));
  CreatePod(ns, "sim-a", "sim");
  CreatePod(ns, "sim-b", "sim");
  SetReady(ns, "sim-a", "127.0.0.10", true);
  SetReady(ns, "sim-b", "127.0.0.11", true);
  StartGateway(ns);
  auto first = std::move(gateway_);
  StartGateway(ns);
  auto second = std::move(gateway_);
  gateway_ = std::move(first);  // TearDown prints this one's log on failure
  auto on = [&](ChildProcess* g, const std::set<std::string>& want) {
    via_ = g;
    double s = SecondsUntilOnly(want);
    via_ = nullptr;
    if (s < 0) std::cerr << "replica log:\n" << g->Output() << "\n";
    return s;
  };
  EXPECT_GE(on(gateway_.get(), {"sims/sim-a", "sims/sim-b"}), 0);
  EXPECT_GE(on(second.get(), {"sims/sim-a", "sims/sim-b"}), 0);
  SetReady(ns, "sim-b", "127.0.0.11", false);
  double a_s = on(gateway_.get(), {"sims/sim-a"});
  double b_s = on(second.get(), {"sims/sim-a"});
  EXPECT_GE(a_s, 0);
  EXPECT_GE(b_s, 0);
  std::cout << "not-Ready took effect on replica 1 after " << a_s << " s, then on replica 2 "
            << "after " << b_s << " s more (requests included)\n";
  // One replica gone: the other keeps serving from its own watches.
  second.reset();
  SetReady(ns, "sim-b", "127.0.0.11", true);
  EXPECT_GE(on(gateway_.get(), {"sims/sim-a", "sims/sim-b"}), 0);
}

TEST_F(GatewayEnvTest, ServesThroughAnApiServerRestartWithEtcdCompacted) {
  std::string ns = env_->NewNamespace("gw-restart");
  StartSim("127.0.0.7");
  StartSim("127.0.0.8");
  ApplyIn(ns, PoolYaml("sims", "sim", port_));
  CreatePod(ns, "sim-a", "sim");
  CreatePod(ns, "sim-b", "sim");
  SetReady(ns, "sim-a", "127.0.0.7", true);
  SetReady(ns, "sim-b", "127.0.0.8", true);
  StartGateway(ns);
  ASSERT_GE(SecondsUntilOnly({"sims/sim-a", "sims/sim-b"}), 0);
  // Writes after the gateway listed, then the API server goes away and etcd is compacted:
  // the other watches' resourceVersions are too old when it comes back (410 Gone).
  std::string out;
  ASSERT_EQ(env_->Kubectl({"create", "configmap", "bump", "-n", ns}, &out), 0) << out;
  ASSERT_EQ(env_->Kubectl({"label", "configmap", "bump", "-n", ns, "again=1"}, &out), 0) << out;
  ASSERT_TRUE(env_->StopApiServer());
  // The last state keeps serving while the API server is down.
  EXPECT_EQ(Endpoints(4), (std::set<std::string>{"sims/sim-a", "sims/sim-b"}));
  ASSERT_TRUE(env_->CompactEtcd());
  ASSERT_TRUE(env_->StartApiServer());
  auto back = std::chrono::steady_clock::now();
  SetReady(ns, "sim-a", "127.0.0.7", false);
  double moved_s = SecondsUntilOnly({"sims/sim-b"});
  EXPECT_GE(moved_s, 0);
  std::cout << "after the API server came back, a readiness change took effect in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - back).count()
            << " s\n";
}

}  // namespace
}  // namespace kinference

namespace kinference {
namespace {

// An InferenceTenant's spec.limits (accepted by the CRD schema, read by the gateway) is
// enforced by a gateway with an accounting section, and follows edits live.
TEST_F(GatewayEnvTest, TenantSpecLimitsAreEnforcedAndFollowEdits) {
  std::string ns = env_->NewNamespace("gw-limits");
  StartSim("127.0.0.9");
  ApplyIn(ns, PoolYaml("lim", "lim", port_));
  CreatePod(ns, "lim-0", "lim");
  SetReady(ns, "lim-0", "127.0.0.9", true);
  std::string out;
  ASSERT_EQ(env_->Kubectl({"create", "secret", "generic", "acme-keys", "-n", ns,
                           "--from-literal=key=sk-acme-1"},
                          &out),
            0)
      << out;
  auto tenant = [](int rpm) {
    return "apiVersion: kinference.io/v1alpha1\nkind: InferenceTenant\nmetadata:\n  name: acme\n"
           "spec:\n  apiKeys:\n  - secretRef: {name: acme-keys, key: key}\n  limits:\n"
           "    requestsPerMinute: " +
           std::to_string(rpm) +
           "\n    spendPerDayUSD: \"5.00\"\n    onLimitsUnavailable: FailClosed\n";
  };
  ApplyIn(ns, tenant(2));
  StartGateway(ns, "accounting:\n  ledger: {store: none}\n");
  http::Headers acme{{{"authorization", "Bearer sk-acme-1"}}};
  const std::string body = std::string(R"({"model":")") + kModel +
                           R"(","messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
  // Two requests per minute: the third is refused once the tenant and its limits arrived.
  ASSERT_TRUE(
      WaitFor([&] { return Call("POST", "/v1/chat/completions", body, acme).status == 429; }, 30));
  auto refused = Call("POST", "/v1/chat/completions", body, acme);
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.headers.Find("x-ratelimit-limit-requests"), "2");
  EXPECT_FALSE(refused.headers.Find("retry-after").empty());
  // Raised with kubectl: admitted again.
  ApplyIn(ns, tenant(1000));
  ASSERT_TRUE(
      WaitFor([&] { return Call("POST", "/v1/chat/completions", body, acme).status == 200; }, 30));
  EXPECT_EQ(
      Call("POST", "/v1/chat/completions", body, acme).headers.Find("x-ratelimit-limit-requests"),
      "1000");
  // The API server refuses what the schema does not allow.
  auto bad = env_->k8s().Kubectl({"apply", "-n", ns, "-f", "-"},
                                 "apiVersion: kinference.io/v1alpha1\nkind: InferenceTenant\n"
                                 "metadata:\n  name: bad\nspec:\n  apiKeys:\n"
                                 "  - secretRef: {name: acme-keys}\n  limits:\n"
                                 "    requestsPerMinute: 0\n");
  EXPECT_NE(bad.exit_code, 0) << bad.output;
}

}  // namespace
}  // namespace kinference
