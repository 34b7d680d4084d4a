// Shared fixture for the gateway's InferencePolicy tests: fake upstreams and a fake
// external classifier on the harness's io_context, config builders (pools, providers,
// policy files in a temp dir) and helpers reading /debug/decisions and /metrics.
//
// Thread-safety: as GatewayHarness (test thread drives; fakes live on the io thread).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "fake_upstream.h"
#include "gateway_harness.h"
#include "http/server.h"

namespace kinference::gateway::policy_testing {

namespace json = boost::json;
namespace fs = std::filesystem;
using gateway::testing::FakeMode;
using gateway::testing::FakeUpstream;

inline constexpr const char* kKeyEnv = "KINFERENCE_TEST_POLICY_KEY";
inline const std::string kExamples = std::string(KINFERENCE_SOURCE_DIR) + "/examples/policies/";

inline std::string Chat(const std::string& model, const std::string& text, bool tools = false) {
  json::object body{{"model", model},
                    {"messages", json::array{json::object{{"role", "user"}, {"content", text}}}}};
  if (tools) {
    body["tools"] = json::array{
        json::object{{"type", "function"},
                     {"function", json::object{{"name", "f"}, {"parameters", json::object{}}}}}};
  }
  return json::serialize(body);
}

inline std::string Messages(const std::string& model, const std::string& text) {
  return json::serialize(
      json::object{{"model", model},
                   {"max_tokens", 16},
                   {"messages", json::array{json::object{{"role", "user"}, {"content", text}}}}});
}

inline constexpr const char* kPiiPolicy = R"(apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: %s}
spec:
  mode: %s
  match: {tags: {anyOf: [pii]}}
  constraints: {exclude: {classes: [provider]}}
  onTaggerFailure: %s
)";

inline std::string PiiPolicy(const std::string& name, const std::string& mode = "enforce",
                             const std::string& on_failure = "reject") {
  char buf[512];
  snprintf(buf, sizeof buf, kPiiPolicy, name.c_str(), mode.c_str(), on_failure.c_str());
  return buf;
}

inline std::string IncludePolicy(const std::string& name, const std::string& selector) {
  return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: " + name +
         "}\nspec:\n  constraints: {include: " + selector + "}\n";
}

// A fake external classifier: answers POST /classify with fixed tags, or holds the
// request until Release (or forever: a timeout).
class FakeClassifier {
 public:
  FakeClassifier(boost::asio::io_context& io, bool hold, std::string tags_json)
      : hold_(hold), tags_json_(std::move(tags_json)) {
    server_ = std::make_unique<http::Server>(io, http::ServerOptions{});
    server_->Route("POST", "/classify", [this](http::Request r, auto w) {
      last_body_ = r.body;
      ++requests_;
      if (hold_) {
        held_.push_back(std::move(w));
        return;
      }
      w->Send(200, "application/json", R"({"tags":)" + tags_json_ + "}");
    });
    port_ = *server_->Start();
  }
  // Answers the held requests (io thread).
  void Release() {
    for (auto& w : held_) w->Send(200, "application/json", R"({"tags":)" + tags_json_ + "}");
    held_.clear();
  }
  void Stop() {
    held_.clear();
    server_->Stop();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/classify"; }
  uint16_t port() const { return port_; }
  int requests() const { return requests_; }
  std::string last_body() const { return last_body_; }

 private:
  bool hold_;
  std::string tags_json_;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::string last_body_;
  std::vector<std::shared_ptr<http::ResponseWriter>> held_;
};

class PolicyProxyTest : public gateway::testing::GatewayHarness {
 protected:
  void SetUp() override {
    setenv(kKeyEnv, "sk-provider", 1);
    char tmpl[] = "/tmp/kinference-policy-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    GatewayHarness::TearDown();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  FakeUpstream& Fake() {
    fakes_.push_back(std::make_unique<FakeUpstream>(io(), FakeMode::kOk));
    FakeUpstream* f = fakes_.back().get();
    OnStop([f] { f->Stop(); });
    return *f;
  }
  static void AddPool(GatewayConfig& c, const std::string& name, const std::string& model,
                      const FakeUpstream& f) {
    c.pools.push_back(PoolConfig{
        name, model, {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(f.port()), "t")}});
  }
  static void AddProvider(GatewayConfig& c, const std::string& name, const std::string& model,
                          const FakeUpstream& f) {
    ProviderConfig p;
    p.name = name;
    p.model = "ext-" + model;
    p.serves_model = model;
    p.base_url = "http://127.0.0.1:" + std::to_string(f.port()) + "/v1";
    p.tls = false;
    p.host = "127.0.0.1";
    p.port = f.port();
    p.base_path = "/v1";
    p.api_key_env = kKeyEnv;
    c.providers.push_back(std::move(p));
  }
  GatewayConfig Base(std::vector<std::string> policy_files) {
    GatewayConfig c;
    c.scrape_interval_s = 0.05;
    c.policies.files = std::move(policy_files);
    c.policies.reload_interval_s = 0.05;
    return c;
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // Retries `f` every 20 ms until it holds or 10 s passed.
  static bool WaitUntil(const std::function<bool()>& f) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  void OnIo(std::function<void()> f) {
    std::promise<void> done;
    boost::asio::post(io(), [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }
  json::array Decisions() {
    return json::parse(Call("GET", "/debug/decisions").body).at("decisions").as_array();
  }
  double PolicyCount(const std::string& policy, const std::string& outcome) {
    return Metric("kinference_policy_decisions_total{policy=\"" + policy + "\",outcome=\"" +
                  outcome + "\"}");
  }
  double Generation() { return Metric("\nkinference_policy_generation"); }
  static std::string Endpoint(const http::Response& r) {
    return std::string(r.headers.Find("x-kinference-endpoint"));
  }
  static std::string DecisionHeader(const http::Response& r) {
    return std::string(r.headers.Find("x-kinference-decision"));
  }

  std::string dir_;
  std::vector<std::unique_ptr<FakeUpstream>> fakes_;
  std::unique_ptr<FakeClassifier> classifier_;
};

class ClassifierTest : public PolicyProxyTest {
 protected:
  // Only a provider serves "m"; the policy excludes providers for PII.
  void StartWithClassifier(bool hold, const std::string& tags, const std::string& on_failure) {
    ext_ = &Fake();
    classifier_ = std::make_unique<FakeClassifier>(io(), hold, tags);
    OnStop([this] { classifier_->Stop(); });
    GatewayConfig c = Base({Write("pii.yaml", PiiPolicy("pii-guard", "enforce", on_failure))});
    ClassifierConfig cc;
    cc.url = classifier_->url();
    cc.host = "127.0.0.1";
    cc.port = classifier_->port();
    cc.path = "/classify";
    cc.timeout_s = 0.2;
    cc.name = "pii-model";
    c.tagging.classifier = cc;
    AddProvider(c, "ext", "m", *ext_);
    Start(c);
  }
  FakeUpstream* ext_ = nullptr;
};

}  // namespace kinference::gateway::policy_testing
