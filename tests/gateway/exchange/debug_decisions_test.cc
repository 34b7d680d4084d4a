// GET /debug/decisions with tenants: each tenant sees its own decisions, admins all.
#include "policy_fixture.h"

namespace kinference::gateway {
namespace {

using namespace policy_testing;  // NOLINT: the shared fixture and helpers

class DebugDecisionsTest : public PolicyProxyTest {
 protected:
  static TenantKey Key(const std::string& key, const std::string& tenant) {
    return TenantKey{Sha256(key), tenant};
  }
  void StartWithTenants() {
    FakeUpstream& local = Fake();
    GatewayConfig c = Base({});
    AddPool(c, "local", "m", local);
    c.tenants.enabled = true;
    c.tenants.keys = {Key("k-acme", "acme"), Key("k-globex", "globex"), Key("k-ops", "ops")};
    c.tenants.anonymous_tenant = "free";
    c.policies.debug_admin_tenants = {"ops"};
    Start(c);
    for (const char* key : {"k-acme", "k-globex"}) {
      ASSERT_EQ(Post(Chat("m", "hi"), Bearer(key)).status, 200);
    }
    ASSERT_EQ(Post(Chat("m", "hi")).status, 200);  // anonymous: tenant "free"
  }
  static http::Headers Bearer(const std::string& key) {
    http::Headers h;
    h.Add("authorization", "Bearer " + key);
    return h;
  }
  std::vector<std::string> TenantsSeenBy(const http::Headers& h) {
    auto r = Call("GET", "/debug/decisions", "", h);
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<std::string> out;
    json::value body = json::parse(r.body);
    for (const auto& d : body.at("decisions").as_array())
      out.emplace_back(d.at("tenant").as_string());
    return out;
  }
};

TEST_F(DebugDecisionsTest, TenantsSeeOnlyTheirOwnAdminsSeeAll) {
  StartWithTenants();
  auto anon = Call("GET", "/debug/decisions");
  EXPECT_EQ(anon.status, 401) << anon.body;
  EXPECT_EQ(json::parse(anon.body).at("error").at("type").as_string(), "authentication_error");
  EXPECT_EQ(Call("GET", "/debug/decisions", "", Bearer("wrong")).status, 401);
  EXPECT_EQ(TenantsSeenBy(Bearer("k-acme")), std::vector<std::string>{"acme"});
  EXPECT_EQ(TenantsSeenBy(Bearer("k-globex")), std::vector<std::string>{"globex"});
  EXPECT_EQ(TenantsSeenBy(Bearer("k-ops")), (std::vector<std::string>{"acme", "globex", "free"}));
}

}  // namespace
}  // namespace kinference::gateway
