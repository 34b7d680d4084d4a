// GET /debug/endpoints: the router's view of each endpoint, here fed the /metrics page
// captured from real vLLM 0.32.0 (CPU build; tests/routing/testdata/).
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "fake_upstream.h"
#include "gateway/context.h"
#include "gateway/front/tenants.h"
#include "gateway_harness.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using testing::DeadPort;
using testing::FakeMode;
using testing::FakeUpstream;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class EndpointsDebugTest : public testing::GatewayHarness {
 protected:
  // Pool "real": endpoint 0 a fake serving the captured vLLM page, endpoint 1 a dead port.
  void StartPool(GatewayConfig c = {}) {
    fake_ = std::make_unique<FakeUpstream>(io(), FakeMode::kOk);
    fake_->set_metrics(ReadFile(std::string(KINFERENCE_SOURCE_DIR) +
                                "/tests/routing/testdata/vllm-0.32.0-cpu-metrics.txt"));
    FakeUpstream* f = fake_.get();
    OnStop([f] { f->Stop(); });
    c.scrape_interval_s = 0.05;
    c.pools.push_back(
        PoolConfig{"real",
                   "tiny-qwen2",
                   {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(fake_->port()), "test"),
                    ParseEndpointUrl("http://127.0.0.1:" + std::to_string(DeadPort()), "test")}});
    Start(c);
  }
  json::array Endpoints(http::Headers h = {}) {
    auto r = Call("GET", "/debug/endpoints", "", std::move(h));
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body).at("endpoints").as_array();
  }
  // Polls until endpoint 0 has a snapshot and endpoint 1 is unhealthy (scrapes every 50 ms).
  json::array Settled() {
    for (int i = 0; i < 200; ++i) {
      json::array eps = Endpoints();
      if (eps.size() == 2 && !eps[0].at("metrics").is_null() && !eps[1].at("healthy").as_bool()) {
        return eps;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "endpoints did not settle";
    return {};
  }
  std::unique_ptr<FakeUpstream> fake_;
};

TEST_F(EndpointsDebugTest, ShowsTheParsedVllmSnapshotWithBlockSizeAndUsageFraction) {
  StartPool();
  json::array eps = Settled();
  ASSERT_EQ(eps.size(), 2u);
  const json::object& a = eps[0].as_object();
  EXPECT_EQ(a.at("id").as_string(), "real/0");
  EXPECT_EQ(a.at("pool").as_string(), "real");
  EXPECT_EQ(a.at("model").as_string(), "tiny-qwen2");
  EXPECT_EQ(a.at("class").as_string(), "local");
  EXPECT_TRUE(a.at("healthy").as_bool());
  EXPECT_GE(a.at("metrics_age_s").to_number<double>(), 0.0);
  const json::object& m = a.at("metrics").as_object();
  EXPECT_EQ(m.at("block_size").to_number<int>(), 128);
  EXPECT_EQ(m.at("num_gpu_blocks").to_number<int>(), 16384);
  // A fraction (48 of 16,384 blocks), not a percentage.
  EXPECT_NEAR(m.at("kv_cache_usage_perc").to_number<double>(), 48.0 / 16384, 1e-6);
  EXPECT_EQ(m.at("num_requests_running").to_number<double>(), 1.0);
  EXPECT_EQ(m.at("prefix_cache_hits_total").to_number<double>(), 11776.0);

  const json::object& dead = eps[1].as_object();
  EXPECT_FALSE(dead.at("healthy").as_bool());
  // Its /metrics connection is refused: ejected (passive health), failures counted.
  EXPECT_GE(dead.at("consecutive_failures").to_number<int>(), 1);
  EXPECT_TRUE(dead.at("metrics").is_null());
  EXPECT_TRUE(dead.at("metrics_age_s").is_null());
}

TEST_F(EndpointsDebugTest, WithTenantsOnlyDebugAdminsMaySeeIt) {
  GatewayConfig c;
  c.tenants.enabled = true;
  c.tenants.keys = {TenantKey{Sha256("k-acme"), "acme"}, TenantKey{Sha256("k-ops"), "ops"}};
  c.tenants.anonymous_tenant = "free";
  c.policies.debug_admin_tenants = {"ops"};
  StartPool(c);
  auto bearer = [](const std::string& key) {
    http::Headers h;
    h.Add("authorization", "Bearer " + key);
    return h;
  };
  EXPECT_EQ(Call("GET", "/debug/endpoints").status, 401);  // anonymous is no identity here
  auto acme = Call("GET", "/debug/endpoints", "", bearer("k-acme"));
  EXPECT_EQ(acme.status, 403);
  EXPECT_TRUE(json::parse(acme.body).at("error").is_object());
  EXPECT_EQ(Endpoints(bearer("k-ops")).size(), 2u);
}

}  // namespace
}  // namespace kinference::gateway
