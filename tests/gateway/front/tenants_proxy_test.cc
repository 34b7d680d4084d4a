// Tenants on the request path: 401s in each API's error shape, keys mapped to tenants,
// anonymous traffic, the trusted tenant header, and the tenant label on token counters.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <cstdint>

#include "fake_upstream.h"
#include "gateway/front/tenants.h"
#include "gateway_harness.h"
#include "testing/wire.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using testing::FakeMode;
using testing::FakeUpstream;
using testing::kChat;
using testing::kMessages;

http::Headers Bearer(const std::string& key) {
  http::Headers h;
  h.Add("Authorization", "Bearer " + key);
  return h;
}

class TenantsProxyTest : public testing::GatewayHarness {
 protected:
  void StartWith(TenantsConfig tenants) {
    fake_ = std::make_unique<FakeUpstream>(io(), FakeMode::kOk);
    OnStop([this] { fake_->Stop(); });
    GatewayConfig c;
    c.scrape_interval_s = 0.2;
    c.pools.push_back(PoolConfig{
        "p", "m", {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(fake_->port()), "t")}});
    c.tenants = std::move(tenants);
    Start(c);
  }
  static TenantsConfig Keys() {
    TenantsConfig t;
    t.enabled = true;
    t.keys.push_back(TenantKey{Sha256("sk-acme"), "acme"});
    t.keys.push_back(TenantKey{Sha256("sk-beta"), "beta"});
    return t;
  }
  double PromptTokens(const std::string& tenant) {
    return Metric("kinference_prompt_tokens_total{tenant=\"" + tenant + "\",model=\"m\"}");
  }
  std::unique_ptr<FakeUpstream> fake_;
};

TEST_F(TenantsProxyTest, MissingKeyIs401InOpenAiShape) {
  StartWith(Keys());
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 401);
  auto err = json::parse(r.body).at("error");
  EXPECT_EQ(err.at("type").as_string(), "authentication_error");
  EXPECT_EQ(err.at("code").as_int64(), 401);
  EXPECT_EQ(fake_->requests(), 0);
  EXPECT_EQ(Call("GET", "/v1/models").status, 401);
  EXPECT_EQ(Call("GET", "/v1/models", {}, Bearer("sk-acme")).status, 200);
}

// Sends a request header announcing `length` body bytes and none of them; returns what
// the gateway answers before closing.
std::string HeaderOnly(uint16_t port, const std::string& path, size_t length,
                       const std::string& extra = "") {
  return kinference::testing::RawExchange(
      port, "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
                "Content-Length: " + std::to_string(length) + "\r\n\r\n");
}

// A large body (over 64 KiB) without a valid key is refused on its header, before any of
// it is read: an unauthenticated client cannot make the gateway buffer max_body_bytes.
TEST_F(TenantsProxyTest, LargeBodyWithoutValidKeyIsRefusedBeforeItIsRead) {
  StartWith(Keys());
  std::string r = HeaderOnly(port_, "/v1/chat/completions", 16 << 20);
  EXPECT_NE(r.find("HTTP/1.1 401"), std::string::npos) << r;
  EXPECT_NE(r.find("x-request-id: "), std::string::npos) << r;
  EXPECT_NE(r.find(R"("type":"authentication_error")"), std::string::npos) << r;
  r = HeaderOnly(port_, "/v1/completions", 1 << 20, "Authorization: Bearer sk-wrong\r\n");
  EXPECT_NE(r.find("HTTP/1.1 401"), std::string::npos) << r;
  r = HeaderOnly(port_, "/v1/messages", 1 << 20, "x-api-key: sk-wrong\r\n");
  EXPECT_NE(r.find("HTTP/1.1 401"), std::string::npos) << r;
  EXPECT_NE(r.find(R"({"type":"error","error":{"type":"authentication_error")"), std::string::npos)
      << r;
  EXPECT_EQ(fake_->requests(), 0);
  // With a valid key the large body is read and served; small bodies are refused after
  // they are read, as before (keep-alive, access log).
  const std::string large = R"({"model":"m","messages":[{"role":"user","content":")" +
                            std::string(100 * 1024, 'x') + R"("}]})";
  EXPECT_EQ(Post(large, Bearer("sk-acme")).status, 200);
  EXPECT_EQ(Post(kChat).status, 401);
  EXPECT_EQ(fake_->requests(), 1);
}

TEST_F(TenantsProxyTest, WrongKeyIs401) {
  StartWith(Keys());
  EXPECT_EQ(Post(kChat, Bearer("sk-wrong")).status, 401);
  EXPECT_EQ(Post(kChat, Bearer("")).status, 401);
  EXPECT_EQ(fake_->requests(), 0);
}

TEST_F(TenantsProxyTest, KeysMapToTenantsInTokenCounters) {
  StartWith(Keys());
  EXPECT_EQ(Post(kChat, Bearer("sk-acme")).status, 200);
  EXPECT_EQ(Post(kChat, Bearer("sk-acme")).status, 200);
  http::Headers lower;
  lower.Add("authorization", "bearer sk-beta");  // the scheme is case-insensitive
  EXPECT_EQ(Post(kChat, lower).status, 200);
  EXPECT_EQ(PromptTokens("acme"), 24);  // the fake reports 12 prompt tokens each
  EXPECT_EQ(PromptTokens("beta"), 12);
  EXPECT_EQ(PromptTokens("default"), 0);
}

TEST_F(TenantsProxyTest, AnthropicFrontAcceptsXApiKeyAndAnswersInItsShape) {
  StartWith(Keys());
  auto denied = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(denied.status, 401);
  auto body = json::parse(denied.body);
  EXPECT_EQ(body.at("type").as_string(), "error");
  EXPECT_EQ(body.at("error").at("type").as_string(), "authentication_error");
  http::Headers h;
  h.Add("x-api-key", "sk-beta");
  auto ok = Post(kMessages, h, "/v1/messages");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(PromptTokens("beta"), 12);
  // x-api-key is Anthropic's header only.
  EXPECT_EQ(Post(kChat, h).status, 401);
}

TEST_F(TenantsProxyTest, AnonymousTenantForRequestsWithoutKey) {
  TenantsConfig t = Keys();
  t.anonymous_tenant = "free";
  StartWith(t);
  EXPECT_EQ(Post(kChat).status, 200);
  EXPECT_EQ(PromptTokens("free"), 12);
  EXPECT_EQ(Post(kChat, Bearer("sk-wrong")).status, 401);  // a bad key is not anonymous
}

TEST_F(TenantsProxyTest, TenantHeaderOnlyWhenTrusted) {
  http::Headers h;
  h.Add("x-kinference-tenant", "team-x");
  {
    TenantsConfig t = Keys();
    t.trust_tenant_header = true;
    StartWith(t);
    EXPECT_EQ(Post(kChat, h).status, 200);
    EXPECT_EQ(PromptTokens("team-x"), 12);
  }
}

TEST_F(TenantsProxyTest, TenantHeaderIgnoredWhenNotTrusted) {
  StartWith(Keys());
  http::Headers h;
  h.Add("x-kinference-tenant", "team-x");
  EXPECT_EQ(Post(kChat, h).status, 401);
}

TEST_F(TenantsProxyTest, NoTenantsSectionIsAnonymousDefault) {
  StartWith(TenantsConfig{});
  EXPECT_EQ(Post(kChat).status, 200);
  EXPECT_EQ(PromptTokens("default"), 12);
}

}  // namespace
}  // namespace kinference::gateway
