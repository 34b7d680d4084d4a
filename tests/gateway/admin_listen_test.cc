// admin_listen (config.h): /metrics, /health, /ready and /debug/* on a listener of their
// own; the API listener keeps the APIs, /health and /ready, and answers 404 on /metrics and
// /debug/*. Without admin_listen everything stays on the API listener (compatibility).
#include <gtest/gtest.h>

#include "gateway/config/config.h"
#include "gateway_harness.h"

namespace kinference::gateway {
namespace {

class AdminListenTest : public testing::GatewayHarness {
 protected:
  // A pool whose only endpoint refuses connections (nothing is routed in these tests).
  static GatewayConfig Config(bool admin) {
    GatewayConfig c = ParseGatewayConfig(
        "pools: [{name: p, model: m, endpoints: ['http://127.0.0.1:1']}]\n"
        "scrape_interval_s: 60\n");
    if (admin) c.admin_listen = AdminListenConfig{"127.0.0.1", 0};
    return c;
  }
  http::Response Admin(const std::string& method, const std::string& path) {
    const uint16_t api = port_;
    port_ = *gateway_->AdminPort();
    http::Response r = Call(method, path, method == "POST" ? testing::kChat : "");
    port_ = api;
    return r;
  }
};

TEST_F(AdminListenTest, AdminRoutesAreServedOnTheAdminPortAndNotOnTheApiPort) {
  Start(Config(true));
  ASSERT_TRUE(gateway_->AdminPort().has_value());
  ASSERT_NE(*gateway_->AdminPort(), port_);

  http::Response metrics = Admin("GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("kinference_build_info"), std::string::npos);
  EXPECT_EQ(Admin("GET", "/health").status, 200);
  // 200 or 503 by the endpoint's health; served either way, with the models' state.
  EXPECT_NE(Admin("GET", "/ready").body.find("\"models\""), std::string::npos);
  EXPECT_EQ(Admin("GET", "/debug/endpoints").status, 200);
  EXPECT_EQ(Admin("GET", "/debug/decisions").status, 200);
  // The APIs are not on the admin port.
  EXPECT_EQ(Admin("GET", "/v1/models").status, 404);
  EXPECT_EQ(Admin("POST", "/v1/chat/completions").status, 404);

  // The API port: no metrics, no debug; health and readiness stay for load balancers.
  EXPECT_EQ(Call("GET", "/metrics").status, 404);
  EXPECT_EQ(Call("GET", "/debug/endpoints").status, 404);
  EXPECT_EQ(Call("GET", "/debug/decisions").status, 404);
  EXPECT_EQ(Call("GET", "/health").status, 200);
  EXPECT_NE(Call("GET", "/ready").body.find("\"models\""), std::string::npos);
  http::Response models = Call("GET", "/v1/models");
  EXPECT_EQ(models.status, 200);
  EXPECT_NE(models.body.find("\"m\""), std::string::npos);
}

TEST_F(AdminListenTest, WithoutAdminListenEverythingIsOnTheApiPort) {
  Start(Config(false));
  EXPECT_FALSE(gateway_->AdminPort().has_value());
  EXPECT_EQ(Call("GET", "/metrics").status, 200);
  EXPECT_EQ(Call("GET", "/debug/endpoints").status, 200);
  EXPECT_EQ(Call("GET", "/health").status, 200);
  EXPECT_EQ(Call("GET", "/v1/models").status, 200);
}

TEST(AdminListenConfig, ParsedWithDefaultsAndCheckedAgainstListen) {
  GatewayConfig none =
      ParseGatewayConfig("pools: [{name: p, model: m, endpoints: ['http://h:1']}]");
  EXPECT_FALSE(none.admin_listen.has_value());
  GatewayConfig c = ParseGatewayConfig(
      "admin_listen: {}\npools: [{name: p, model: m, endpoints: ['http://h:1']}]");
  ASSERT_TRUE(c.admin_listen.has_value());
  EXPECT_EQ(c.admin_listen->address, "127.0.0.1");
  EXPECT_EQ(c.admin_listen->port, 9090);
  c = ParseGatewayConfig(
      "admin_listen: {address: 0.0.0.0, port: 9100}\n"
      "pools: [{name: p, model: m, endpoints: ['http://h:1']}]");
  EXPECT_EQ(c.admin_listen->address, "0.0.0.0");
  EXPECT_EQ(c.admin_listen->port, 9100);
  auto error = [](const std::string& yaml) {
    try {
      ParseGatewayConfig(yaml + "\npools: [{name: p, model: m, endpoints: ['http://h:1']}]");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(error("listen: {port: 9000}\nadmin_listen: {port: 9000}"),
            "gateway config: admin_listen.port: must differ from listen.port on the same address");
  EXPECT_EQ(error("admin_listen: {tls: {}}"), "gateway config: admin_listen.tls: unknown field");
  EXPECT_EQ(error("admin_listen: {port: 70000}"),
            "gateway config: admin_listen.port: must be 0..65535");
  EXPECT_EQ(error("admin_listen: 9090"),
            "gateway config: admin_listen: expected a map with address, port");
}

}  // namespace
}  // namespace kinference::gateway
