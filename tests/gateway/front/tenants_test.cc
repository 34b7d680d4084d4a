// Tenant identification and the `tenants` config section.
#include "gateway/front/tenants.h"

#include <gtest/gtest.h>

#include "gateway/config/config.h"

namespace kinference::gateway {
namespace {

const std::string kPools = "pools:\n  - {name: p, model: m, endpoints: [\"http://127.0.0.1:1\"]}\n";

http::Headers H(std::initializer_list<std::pair<std::string, std::string>> items) {
  http::Headers h;
  for (const auto& [k, v] : items) h.Add(k, v);
  return h;
}

TEST(TenantsTest, Sha256MatchesKnownVector) {
  // FIPS 180-2 appendix B.1 test vector: SHA-256("abc").
  EXPECT_EQ(ToHex(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256Digest d;
  ASSERT_TRUE(FromHex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", d));
  EXPECT_EQ(d, Sha256("abc"));
  EXPECT_FALSE(FromHex("abc", d));
  EXPECT_FALSE(FromHex(std::string(64, 'g'), d));
}

TEST(TenantsTest, ConfigMapsHashesToTenants) {
  auto c = ParseGatewayConfig(kPools +
                              "tenants:\n"
                              "  keys:\n"
                              "    - {sha256: " +
                              ToHex(Sha256("sk-a")) +
                              ", tenant: acme}\n"
                              "  anonymous_tenant: free\n"
                              "  trust_tenant_header: true\n"
                              "  tenant_header: x-team\n");
  ASSERT_TRUE(c.tenants.enabled);
  ASSERT_EQ(c.tenants.keys.size(), 1u);
  EXPECT_EQ(c.tenants.keys[0].tenant, "acme");
  EXPECT_EQ(c.tenants.keys[0].sha256, Sha256("sk-a"));
  EXPECT_EQ(c.tenants.anonymous_tenant, "free");
  EXPECT_TRUE(c.tenants.trust_tenant_header);
  EXPECT_EQ(c.tenants.tenant_header, "x-team");
  EXPECT_FALSE(ParseGatewayConfig(kPools).tenants.enabled);
}

TEST(TenantsTest, ConfigErrorsNameTheField) {
  auto expect_error = [](const std::string& yaml, const std::string& field) {
    try {
      ParseGatewayConfig(yaml);
      ADD_FAILURE() << "no error for " << yaml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_error(kPools + "tenants:\n  keys:\n    - {sha256: sk-plaintext, tenant: a}\n",
               "tenants.keys[0].sha256");
  expect_error(kPools + "tenants:\n  keys:\n    - {sha256: " + ToHex(Sha256("k")) + "}\n",
               "tenants.keys[0].tenant");
  expect_error(kPools + "tenants:\n  trust_tenant_header: maybe\n", "tenants.trust_tenant_header");
  expect_error(kPools + "tenants:\n  anonymous: x\n", "tenants.anonymous");
}

TEST(TenantsTest, AuthorizationNotInBearerFormIsRefusedEvenWithAnonymousAllowed) {
  TenantsConfig c;
  c.enabled = true;
  c.keys = {{Sha256("sk-a"), "acme"}};
  c.anonymous_tenant = "free";
  for (const char* value : {"Basic c2stYTo=", "sk-a", "Bearer ", "Bearer    ", "Token sk-a"}) {
    auto r = Identify(c, H({{"Authorization", value}}), ApiFront::kOpenAi);
    ASSERT_FALSE(r.ok()) << value << " -> " << *r;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnauthenticated) << value;
    EXPECT_NE(r.status().message().find("Bearer <key>"), std::string::npos) << value;
    EXPECT_FALSE(Identify(c, H({{"Authorization", value}}), ApiFront::kAnthropic).ok()) << value;
  }
  // /v1/messages: x-api-key still carries the key beside an Authorization in another form.
  EXPECT_EQ(*Identify(c, H({{"Authorization", "Basic c2stYTo="}, {"x-api-key", "sk-a"}}),
                      ApiFront::kAnthropic),
            "acme");
  // No credential at all is still the anonymous tenant.
  EXPECT_EQ(*Identify(c, {}, ApiFront::kOpenAi), "free");
}

TEST(TenantsTest, WrongKeyErrorNamesTheHeaderItWasReadFrom) {
  TenantsConfig c;
  c.enabled = true;
  c.keys = {{Sha256("sk-a"), "acme"}};
  auto bearer = Identify(c, H({{"Authorization", "Bearer sk-x"}, {"x-api-key", "sk-a"}}),
                         ApiFront::kAnthropic);
  ASSERT_FALSE(bearer.ok());
  EXPECT_EQ(bearer.status().message(), "invalid API key in the Authorization header");
  auto x_api_key = Identify(c, H({{"x-api-key", "sk-x"}}), ApiFront::kAnthropic);
  ASSERT_FALSE(x_api_key.ok());
  EXPECT_EQ(x_api_key.status().message(), "invalid x-api-key");
}

TEST(TenantsTest, IdentifyByKeyHeaderOrAnonymous) {
  TenantsConfig c;
  c.enabled = true;
  c.keys = {{Sha256("sk-a"), "acme"}, {Sha256("sk-b"), "beta"}};
  EXPECT_EQ(*Identify(c, H({{"Authorization", "Bearer sk-b"}}), ApiFront::kOpenAi), "beta");
  EXPECT_EQ(*Identify(c, H({{"authorization", "BEARER  sk-a "}}), ApiFront::kOpenAi), "acme");
  EXPECT_EQ(*Identify(c, H({{"x-api-key", "sk-a"}}), ApiFront::kAnthropic), "acme");
  auto no_key = Identify(c, H({{"x-api-key", "sk-a"}}), ApiFront::kOpenAi);
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ(no_key.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_FALSE(Identify(c, H({{"Authorization", "Basic c2stYQ=="}}), ApiFront::kOpenAi).ok());
  EXPECT_FALSE(Identify(c, H({{"Authorization", "Bearer sk-c"}}), ApiFront::kOpenAi).ok());
  // The tenant header counts only when trusted.
  auto h = H({{"x-kinference-tenant", "team"}});
  EXPECT_FALSE(Identify(c, h, ApiFront::kOpenAi).ok());
  c.trust_tenant_header = true;
  EXPECT_EQ(*Identify(c, h, ApiFront::kOpenAi), "team");
  c.anonymous_tenant = "free";
  EXPECT_EQ(*Identify(c, {}, ApiFront::kOpenAi), "free");
  EXPECT_FALSE(Identify(c, H({{"Authorization", "Bearer sk-c"}}), ApiFront::kOpenAi).ok());
  EXPECT_EQ(*Identify(TenantsConfig{}, {}, ApiFront::kOpenAi), "default");
}

}  // namespace
}  // namespace kinference::gateway
