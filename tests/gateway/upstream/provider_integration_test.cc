// End to end with real processes: `kinference engine-sim --tls-cert/--tls-key` plays an
// external provider over HTTPS (certificate made at test time) behind `kinference
// gateway` with a `providers` section, an API key from the environment and tenants.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>

#include "../../http/tls_fake_server.h"
#include "gateway/front/tenants.h"
#include "http/client.h"
#include "testing/launch.h"

namespace kinference::gateway {
namespace {

using kinference::testing::ChildProcess;
using kinference::testing::LaunchKinference;

http::Response Post(uint16_t port, const std::string& body, const std::string& key) {
  http::ClientRequest r;
  r.port = port;
  r.target = "/v1/chat/completions";
  r.body = body;
  if (!key.empty()) r.headers.Add("Authorization", "Bearer " + key);
  r.header_timeout_s = 60;  // hang guard only
  auto res = http::FetchSync(r);
  EXPECT_TRUE(res.ok()) << res.status().message();
  return res.ok() ? *res : http::Response{};
}

TEST(ProviderIntegrationTest, GatewayReachesHttpsEngineSimAsProvider) {
  auto cert = kinference::testing::MakeTestCert("sim");
  ASSERT_FALSE(cert.cert_file.empty()) << "openssl CLI failed";
  auto sim = LaunchKinference({"engine-sim", "--port", "0", "--time-scale", "20",
                               "--served-model-name", "upstream-model", "--tls-cert",
                               cert.cert_file, "--tls-key", cert.key_file});
  ASSERT_TRUE(sim);
  std::string config = ::testing::TempDir() + "/provider-gw-" + std::to_string(getpid()) + ".yaml";
  {
    std::ofstream out(config);
    out << "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 20\n"
        << "tenants:\n  keys:\n    - {sha256: " << ToHex(Sha256("sk-client")) << ", tenant: acme}\n"
        << "providers:\n  - name: sim\n    model: upstream-model\n    serves_model: m\n"
        << "    base_url: https://127.0.0.1:" << sim->port() << "/v1\n"
        << "    api_key_env: KINFERENCE_IT_PROVIDER_KEY\n"
        << "    ca_file: " << cert.cert_file << "\n";
  }
  setenv("KINFERENCE_IT_PROVIDER_KEY", "sk-upstream", 1);
  auto gw = LaunchKinference({"gateway", "--config", config});
  unsetenv("KINFERENCE_IT_PROVIDER_KEY");
  ASSERT_TRUE(gw);
  const std::string body =
      R"({"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]})";
  EXPECT_EQ(Post(gw->port(), body, "").status, 401);
  auto r = Post(gw->port(), body, "sk-client");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "provider/sim");
  EXPECT_NE(r.body.find("\"model\":\"upstream-model\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("[DONE]"), std::string::npos);
  http::ClientRequest m;
  m.method = "GET";
  m.port = gw->port();
  m.target = "/metrics";
  auto metrics = http::FetchSync(m);
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("kinference_prompt_tokens_total{tenant=\"acme\",model=\"m\"}"),
            std::string::npos);
  std::remove(config.c_str());
}

}  // namespace
}  // namespace kinference::gateway
