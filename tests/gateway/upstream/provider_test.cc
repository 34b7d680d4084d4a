// External providers behind the gateway, over TLS to an in-test HTTPS server that plays
// the provider (certificate made at test time, trusted through ca_file): model rewrite,
// bearer key, certificate failures, start-up errors and the circuit breaker.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/json.hpp>
#include <chrono>
#include <thread>

#include "../../http/tls_fake_server.h"
#include "fake_upstream.h"
#include "gateway_harness.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::MakeTestCert;
using kinference::testing::TestCert;
using kinference::testing::TlsFakeServer;
using testing::kChat;
using testing::kStreamChat;

const char* kKeyEnv = "KINFERENCE_TEST_PROVIDER_KEY";

class ProviderTest : public testing::GatewayHarness {
 protected:
  void SetUp() override {
    cert_ = MakeTestCert("provider");
    ASSERT_FALSE(cert_.cert_file.empty()) << "openssl CLI failed";
    server_ = std::make_unique<TlsFakeServer>(cert_);
    setenv(kKeyEnv, "sk-provider-secret", 1);
  }
  ProviderConfig Provider() const {
    ProviderConfig p;
    p.name = "ext";
    p.model = "gpt-test";
    p.serves_model = "m";
    p.base_url = "https://127.0.0.1:" + std::to_string(server_->port()) + "/v1";
    p.tls = true;
    p.host = "127.0.0.1";
    p.port = server_->port();
    p.base_path = "/v1";
    p.api_key_env = kKeyEnv;
    p.ca_file = cert_.cert_file;
    return p;
  }
  void StartWith(ProviderConfig p) {
    GatewayConfig c;
    c.scrape_interval_s = 0.05;
    c.providers.push_back(std::move(p));
    Start(c);
  }
  TestCert cert_;
  std::unique_ptr<TlsFakeServer> server_;
  std::unique_ptr<testing::FakeUpstream> local_;  // outlives TearDown
};

TEST_F(ProviderTest, RoutedOverTlsWithBearerKeyAndProviderModel) {
  StartWith(Provider());
  auto r = Post(kChat);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "provider/ext");
  EXPECT_EQ(server_->last_authorization(), "Bearer sk-provider-secret");
  EXPECT_EQ(server_->last_target(), "/v1/chat/completions");
  EXPECT_EQ(json::parse(server_->last_body()).at("model").as_string(), "gpt-test");
  EXPECT_EQ(Metric("kinference_prompt_tokens_total{tenant=\"default\",model=\"m\"}"), 7);
  // The client's own Authorization never reaches the provider.
  http::Headers h;
  h.Add("authorization", "Bearer client-key");
  auto s = Post(kStreamChat, h);
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_NE(s.body.find("\"content\":\"hi\""), std::string::npos);
  EXPECT_EQ(server_->last_authorization(), "Bearer sk-provider-secret");
  EXPECT_EQ(server_->requests(), 2);
  // The provider's model is listed under the gateway's name.
  EXPECT_NE(Call("GET", "/v1/models").body.find("\"id\":\"m\""), std::string::npos);
}

TEST_F(ProviderTest, UntrustedCertificateIsAnUpstreamFailure) {
  TestCert other = MakeTestCert("other");
  ASSERT_FALSE(other.cert_file.empty());
  ProviderConfig p = Provider();
  p.ca_file = other.cert_file;
  p.retries_before_first_byte = 1;
  StartWith(p);
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503) << r.body;
  // The gateway's words (the TLS error and the address are in the log only).
  EXPECT_NE(r.body.find("The connection to the model server failed; request id kgw-"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(r.body.find("127.0.0.1"), std::string::npos) << r.body;
  EXPECT_EQ(server_->requests(), 0);
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"provider/ext\",strategy="
                   "\"predicted-ttft\",outcome=\"success\"}"),
            0);
}

TEST_F(ProviderTest, MissingApiKeyEnvIsAStartupErrorNamingTheField) {
  unsetenv(kKeyEnv);
  GatewayConfig c;
  c.providers.push_back(Provider());
  try {
    Gateway g(io(), c);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("providers[0].api_key_env"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(kKeyEnv), std::string::npos);
  }
}

TEST_F(ProviderTest, CircuitBreakerOpensAfterFailuresAndClosesAfterCooldown) {
  server_->set_status(500);
  ProviderConfig p = Provider();
  p.retries_before_first_byte = 0;
  p.breaker_failures = 2;
  p.breaker_cooldown_s = 0.3;
  StartWith(p);
  EXPECT_EQ(Post(kChat).status, 502);  // the gateway's answer to an upstream 5xx
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"provider/ext\"}"), 1);
  EXPECT_EQ(Post(kChat).status, 502);  // the gateway's answer to an upstream 5xx
  // Open: the provider is not called.
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"provider/ext\"}"), 0);
  EXPECT_EQ(Post(kChat).status, 503);
  EXPECT_EQ(server_->requests(), 2);
  // After the cool-down it is tried again (polling; the loop bound is a hang guard).
  server_->set_status(200);
  int status = 0;
  for (int i = 0; i < 200 && status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    status = Post(kChat).status;
  }
  EXPECT_EQ(status, 200);
  EXPECT_EQ(server_->requests(), 3);
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"provider/ext\"}"), 1);
}

TEST_F(ProviderTest, HalfOpenBreakerReopensOnOneFailure) {
  server_->set_status(500);
  ProviderConfig p = Provider();
  p.retries_before_first_byte = 0;
  p.breaker_failures = 2;
  p.breaker_cooldown_s = 0.2;
  StartWith(p);
  EXPECT_EQ(Post(kChat).status, 502);  // the gateway's answer to an upstream 5xx
  EXPECT_EQ(Post(kChat).status, 502);  // the gateway's answer to an upstream 5xx
  int calls = server_->requests();
  for (int i = 0; i < 200 && server_->requests() == calls; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Post(kChat);
  }
  EXPECT_EQ(server_->requests(), 3);   // one half-open try ...
  EXPECT_EQ(Post(kChat).status, 503);  // ... failed, so it is open again
  EXPECT_EQ(server_->requests(), 3);
}

TEST_F(ProviderTest, ProviderBesideALocalPoolFailsOverToIt) {
  local_ = std::make_unique<testing::FakeUpstream>(io(), testing::FakeMode::kOk);
  OnStop([this] { local_->Stop(); });
  testing::FakeUpstream& local = *local_;
  TestCert other = MakeTestCert("other");
  ASSERT_FALSE(other.cert_file.empty());
  ProviderConfig p = Provider();
  p.ca_file = other.cert_file;  // every provider call fails verification
  GatewayConfig c;
  c.scrape_interval_s = 0.05;
  c.pools.push_back(PoolConfig{
      "p", "m", {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(local.port()), "t")}});
  c.providers.push_back(p);
  Start(c);
  int local_before = 0;
  for (int i = 0; i < 4; ++i) {
    auto r = Post(kChat);
    EXPECT_EQ(r.status, 200) << r.body;  // a provider failure is retried on the pool
    EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "p/0");
    EXPECT_EQ(local.requests(), ++local_before);
  }
  EXPECT_EQ(server_->requests(), 0);
}

// A wrong provider key is the gateway's fault: 502 (never the provider's 401, nor its
// body, which may quote part of the key) and a circuit-breaker failure.
TEST_F(ProviderTest, RejectedKeyIsABadGatewayAndABreakerFailure) {
  server_->set_response(
      401, "application/json",
      R"({"error":{"message":"Incorrect API key provided: sk-pro***ret","type":"invalid_request_error","code":"invalid_api_key"}})");
  ProviderConfig p = Provider();
  p.retries_before_first_byte = 0;
  p.breaker_failures = 2;
  p.breaker_cooldown_s = 60;
  StartWith(p);
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 502) << r.body;
  json::value err = json::parse(r.body).at("error");
  EXPECT_EQ(err.at("message"), "upstream provider/ext rejected the gateway's credentials (401)");
  EXPECT_TRUE(err.as_object().contains("type"));
  EXPECT_EQ(r.body.find("sk-pro"), std::string::npos) << r.body;
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"provider/ext\"}"), 1);
  server_->set_response(403, "application/json", R"({"error":{"message":"region"}})");
  auto s = Post(kStreamChat);
  EXPECT_EQ(s.status, 502) << s.body;
  EXPECT_EQ(json::parse(s.body).at("error").at("message"),
            "upstream provider/ext rejected the gateway's credentials (403)");
  // Two consecutive failures opened the breaker: the provider is no longer called.
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"provider/ext\"}"), 0);
  EXPECT_EQ(Post(kChat).status, 503);
  EXPECT_EQ(server_->requests(), 2);
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"provider/ext\",strategy="
                   "\"predicted-ttft\",outcome=\"error\"}"),
            2);
}

TEST_F(ProviderTest, UnusableCaFileIsAStartupErrorNamingTheField) {
  ProviderConfig p = Provider();
  p.ca_file = cert_.key_file;  // PEM, but no certificate
  GatewayConfig c;
  c.providers.push_back(p);
  try {
    Gateway g(io(), c);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("providers[0].ca_file"), std::string::npos) << e.what();
  }
}

TEST_F(ProviderTest, RetriesBeforeFirstByteOnTheProvider) {
  server_->set_status(500);
  ProviderConfig p = Provider();
  p.retries_before_first_byte = 2;
  p.breaker_failures = 10;
  StartWith(p);
  EXPECT_EQ(Post(kChat).status, 502);  // the gateway's answer to an upstream 5xx
  EXPECT_EQ(server_->requests(), 3);   // the first try and two retries
}

}  // namespace
}  // namespace kinference::gateway
