// The gateway config's `policies` and `tagging` sections: defaults, values, strict keys,
// and policy paths resolved against the config file's directory.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "config_test_util.h"
#include "gateway/config/config.h"

namespace kinference::gateway {
namespace {

const std::string kPool = "pools: [{name: a, model: m, endpoints: [\"http://127.0.0.1:8001\"]}]\n";

std::string ErrorOf(const std::string& yaml) { return testing::ConfigErrorOf(kPool + yaml); }

TEST(PolicyConfigTest, Defaults) {
  GatewayConfig c = ParseGatewayConfig(kPool);
  EXPECT_TRUE(c.policies.files.empty());
  EXPECT_EQ(c.policies.reload_interval_s, 2);
  EXPECT_TRUE(c.tagging.pii);
  EXPECT_TRUE(c.tagging.simple);
  EXPECT_EQ(c.tagging.simple_max_prompt_tokens, 256);
  EXPECT_FALSE(c.tagging.trusted_tag_header);
  EXPECT_FALSE(c.tagging.classifier);
}

TEST(PolicyConfigTest, ParsesEverything) {
  GatewayConfig c = ParseGatewayConfig(kPool + R"(
policies: {files: [a.yaml, /abs/b.yaml], reload_interval_s: 0.5}
tagging:
  pii: false
  simple: true
  simple_max_prompt_tokens: 64
  trusted_tag_header: true
  classifier: {url: "http://10.0.0.5:9000/v1/classify", timeout_s: 0.3, name: pii-model}
)");
  EXPECT_EQ(c.policies.files, (std::vector<std::string>{"a.yaml", "/abs/b.yaml"}));
  EXPECT_EQ(c.policies.reload_interval_s, 0.5);
  EXPECT_FALSE(c.tagging.pii);
  EXPECT_EQ(c.tagging.simple_max_prompt_tokens, 64);
  EXPECT_TRUE(c.tagging.trusted_tag_header);
  ASSERT_TRUE(c.tagging.classifier);
  EXPECT_EQ(c.tagging.classifier->host, "10.0.0.5");
  EXPECT_EQ(c.tagging.classifier->port, 9000);
  EXPECT_EQ(c.tagging.classifier->path, "/v1/classify");
  EXPECT_EQ(c.tagging.classifier->timeout_s, 0.3);
  EXPECT_EQ(c.tagging.classifier->name, "pii-model");
}

TEST(PolicyConfigTest, ErrorsNameTheField) {
  EXPECT_NE(ErrorOf("policies: {file: [a.yaml]}").find("policies.file: unknown field"),
            std::string::npos);
  EXPECT_NE(ErrorOf("policies: {reload_interval_s: -1}").find("policies.reload_interval_s"),
            std::string::npos);
  EXPECT_NE(ErrorOf("policies: {files: a.yaml}").find("policies.files"), std::string::npos);
  EXPECT_NE(ErrorOf("tagging: {pi: true}").find("tagging.pi: unknown field"), std::string::npos);
  EXPECT_NE(ErrorOf("tagging: {pii: maybe}").find("tagging.pii"), std::string::npos);
  EXPECT_NE(ErrorOf("tagging: {classifier: {url: \"ftp://x\"}}").find("tagging.classifier.url"),
            std::string::npos);
  EXPECT_NE(ErrorOf("tagging: {classifier: {url: \"http://h:1\", timeout_s: 0}}")
                .find("tagging.classifier.timeout_s: must be > 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf("tagging: {classifier: {url: \"http://h:1\", retries: 2}}")
                .find("tagging.classifier.retries: unknown field"),
            std::string::npos);
}

// A reload interval below 0.1 s (a busy poll) and unbounded classifier timeouts are refused; a
// classifier URL without a port gets its scheme's default; debug admins parse.
TEST(PolicyConfigTest, ReloadIntervalTimeoutPortAndDebugAdmins) {
  EXPECT_NE(ErrorOf("policies: {reload_interval_s: 0.001}")
                .find("policies.reload_interval_s: must be 0 (no polling) or >= 0.1"),
            std::string::npos);
  EXPECT_EQ(
      ParseGatewayConfig(kPool + "policies: {reload_interval_s: 0}").policies.reload_interval_s, 0);
  EXPECT_EQ(
      ParseGatewayConfig(kPool + "policies: {reload_interval_s: 0.1}").policies.reload_interval_s,
      0.1);
  EXPECT_NE(ErrorOf("tagging: {classifier: {url: \"http://h:1\", timeout_s: 61}}")
                .find("tagging.classifier.timeout_s: must be in (0, 60]"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("tagging: {classifier: {url: \"http://h:1\", timeout_s: 60}}"), "");

  GatewayConfig c = ParseGatewayConfig(kPool + "tagging: {classifier: {url: \"http://clf/x\"}}");
  EXPECT_EQ(c.tagging.classifier->host, "clf");
  EXPECT_EQ(c.tagging.classifier->port, 80);
  EXPECT_EQ(c.tagging.classifier->path, "/x");
  EXPECT_FALSE(c.tagging.classifier->tls);
  c = ParseGatewayConfig(kPool + "tagging: {classifier: {url: \"https://clf.example\"}}");
  EXPECT_EQ(c.tagging.classifier->host, "clf.example");
  EXPECT_EQ(c.tagging.classifier->port, 443);
  EXPECT_EQ(c.tagging.classifier->path, "/");
  EXPECT_TRUE(c.tagging.classifier->tls);
  EXPECT_NE(ErrorOf("tagging: {classifier: {url: \"http://h:0/x\"}}").find("bad port"),
            std::string::npos);

  c = ParseGatewayConfig(kPool + "policies: {debug_admin_tenants: [ops, sre]}");
  EXPECT_EQ(c.policies.debug_admin_tenants, (std::vector<std::string>{"ops", "sre"}));
  EXPECT_NE(ErrorOf("policies: {debug_admin_tenants: ops}").find("policies.debug_admin_tenants"),
            std::string::npos);
}

TEST(PolicyConfigTest, RelativePolicyPathsResolveAgainstTheConfigFile) {
  char tmpl[] = "/tmp/kinference-pcfg-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/gw.yaml") << kPool << "policies: {files: [policies/a.yaml, /etc/b.yaml]}\n";
  GatewayConfig c = LoadGatewayConfig(dir + "/gw.yaml");
  EXPECT_EQ(c.policies.files, (std::vector<std::string>{dir + "/policies/a.yaml", "/etc/b.yaml"}));
  std::filesystem::remove_all(dir);
}

TEST(PolicyConfigTest, ExampleGatewayConfigNamesAnExistingPolicyFile) {
  GatewayConfig c =
      LoadGatewayConfig(std::string(KINFERENCE_SOURCE_DIR) + "/examples/gateway.yaml");
  ASSERT_EQ(c.policies.files.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(c.policies.files[0])) << c.policies.files[0];
}

}  // namespace
}  // namespace kinference::gateway
