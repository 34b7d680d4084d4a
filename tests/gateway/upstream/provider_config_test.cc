// The `providers` config section, API key loading and the circuit breaker.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config_test_util.h"
#include "gateway/config/config.h"
#include "gateway/upstream/provider.h"

namespace kinference::gateway {
namespace {

const std::string kProvider =
    "providers:\n"
    "  - name: openai\n"
    "    model: gpt-4o-mini\n"
    "    serves_model: m\n"
    "    base_url: https://api.example.com:8443/v1/\n"
    "    api_key_env: KINFERENCE_TEST_KEY\n"
    "    timeout_s: 20\n"
    "    retries_before_first_byte: 2\n"
    "    circuit_breaker: {failures: 3, cooldown_s: 10}\n"
    "    ca_file: /tmp/ca.pem\n";

std::string ErrorOf(const std::string& yaml) { return testing::ConfigErrorOf(yaml); }

TEST(ProviderConfigTest, ParsesEveryField) {
  auto c = ParseGatewayConfig(kProvider);  // pools may be absent with providers
  ASSERT_EQ(c.providers.size(), 1u);
  const auto& p = c.providers[0];
  EXPECT_EQ(p.name, "openai");
  EXPECT_EQ(p.model, "gpt-4o-mini");
  EXPECT_EQ(p.serves_model, "m");
  EXPECT_TRUE(p.tls);
  EXPECT_EQ(p.host, "api.example.com");
  EXPECT_EQ(p.port, 8443);
  EXPECT_EQ(p.base_path, "/v1");
  EXPECT_EQ(p.api_key_env, "KINFERENCE_TEST_KEY");
  EXPECT_EQ(p.timeout_s, 20);
  EXPECT_EQ(p.retries_before_first_byte, 2);
  EXPECT_EQ(p.breaker_failures, 3);
  EXPECT_EQ(p.breaker_cooldown_s, 10);
  EXPECT_EQ(p.ca_file, "/tmp/ca.pem");
  EXPECT_EQ(ProviderTarget(p, "/v1/chat/completions"), "/v1/chat/completions");
  ProviderConfig root = p;
  root.base_path = "";
  EXPECT_EQ(ProviderTarget(root, "/v1/completions"), "/completions");
}

TEST(ProviderConfigTest, DefaultPortsAndErrors) {
  auto c = ParseGatewayConfig(
      "providers:\n  - {name: a, model: x, serves_model: m, base_url: "
      "\"https://h\", api_key_file: /k}\n"
      "  - {name: b, model: x, serves_model: m, base_url: \"http://h\", api_key_env: K}\n");
  EXPECT_EQ(c.providers[0].port, 443);
  EXPECT_EQ(c.providers[0].base_path, "");
  EXPECT_FALSE(c.providers[1].tls);
  EXPECT_EQ(c.providers[1].port, 80);
  EXPECT_NE(ErrorOf("providers:\n  - {name: a, model: x, serves_model: m, base_url: "
                    "\"ftp://h\", api_key_env: K}\n")
                .find("providers[0].base_url"),
            std::string::npos);
  EXPECT_NE(ErrorOf("providers:\n  - {name: a, model: x, serves_model: m, base_url: "
                    "\"https://h\"}\n")
                .find("providers[0].api_key_env"),
            std::string::npos);
  EXPECT_NE(ErrorOf("providers:\n  - {name: a, model: x, base_url: \"https://h\", "
                    "api_key_env: K}\n")
                .find("providers[0].serves_model"),
            std::string::npos);
  EXPECT_NE(ErrorOf("providers:\n  - {name: a, model: x, serves_model: m, base_url: "
                    "\"https://h\", api_key: sk-plain}\n")
                .find("providers[0].api_key: unknown field"),
            std::string::npos);
}

TEST(ProviderConfigTest, AnthropicApi) {
  const std::string base =
      "providers:\n  - {name: a, model: claude-x, serves_model: m, "
      "base_url: 'https://api.anthropic.com', api_key_env: K";
  auto c = ParseGatewayConfig(base + ", api: anthropic}\n");
  const auto& p = c.providers[0];
  EXPECT_EQ(p.api, ProviderApi::kAnthropic);
  EXPECT_EQ(p.anthropic_version, "2023-06-01");
  EXPECT_EQ(p.default_max_tokens, 4096);
  EXPECT_EQ(ProviderTarget(p, "/v1/chat/completions"), "/v1/messages");
  auto d = ParseGatewayConfig(base +
                              ", api: anthropic, anthropic_version: '2024-01-01', "
                              "default_max_tokens: 100}\n");
  EXPECT_EQ(d.providers[0].anthropic_version, "2024-01-01");
  EXPECT_EQ(d.providers[0].default_max_tokens, 100);
  EXPECT_EQ(ParseGatewayConfig(base + "}\n").providers[0].api, ProviderApi::kOpenAi);
  EXPECT_NE(ErrorOf(base + ", api: grpc}\n").find("providers[0].api"), std::string::npos);
  EXPECT_NE(ErrorOf(base + ", anthropic_version: x}\n").find("only valid with api: anthropic"),
            std::string::npos);
  EXPECT_NE(ErrorOf(base + ", api: anthropic, default_max_tokens: 1.5}\n")
                .find("providers[0].default_max_tokens"),
            std::string::npos);
}

TEST(ProviderConfigTest, LoadsKeyFromEnvOrFile) {
  auto c = ParseGatewayConfig(kProvider);
  setenv("KINFERENCE_TEST_KEY", " sk-env\n", 1);
  EXPECT_EQ(LoadProviderApiKey(c.providers[0], "providers[0]"), "sk-env");
  unsetenv("KINFERENCE_TEST_KEY");
  try {
    LoadProviderApiKey(c.providers[0], "providers[0]");
    ADD_FAILURE() << "no error for an unset variable";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("providers[0].api_key_env"), std::string::npos);
  }
  ProviderConfig p = c.providers[0];
  p.api_key_env.clear();
  p.api_key_file = (std::filesystem::temp_directory_path() / "kinference-test-key").string();
  { std::ofstream(p.api_key_file) << "sk-file\n"; }
  EXPECT_EQ(LoadProviderApiKey(p, "providers[0]"), "sk-file");
  std::filesystem::remove(p.api_key_file);
  EXPECT_THROW(LoadProviderApiKey(p, "providers[0]"), ConfigError);
}

TEST(ProviderConfigTest, AnthropicBaseUrlEndingInV1IsAnError) {
  for (const char* url : {"https://api.anthropic.com/v1", "https://api.anthropic.com/v1/",
                          "https://gw.example.com/anthropic/v1", "https://api.anthropic.com/V1"}) {
    std::string e = ErrorOf(
        std::string("providers:\n  - {name: a, model: claude-x, serves_model: m, base_url: '") +
        url + "', api_key_env: K, api: anthropic}\n");
    EXPECT_NE(e.find("providers[0].base_url"), std::string::npos) << url << ": " << e;
    EXPECT_NE(e.find("base_url for api: anthropic ends before /v1, e.g. https://api.anthropic.com"),
              std::string::npos)
        << e;
  }
  // Fine: the API root, a path prefix, and /v1 for api: openai.
  EXPECT_EQ(ErrorOf("providers:\n  - {name: a, model: c, serves_model: m, base_url: "
                    "'https://gw.example.com/anthropic', api_key_env: K, api: anthropic}\n"),
            "");
  EXPECT_EQ(ErrorOf("providers:\n  - {name: a, model: c, serves_model: m, base_url: "
                    "'https://api.openai.com/v1', api_key_env: K}\n"),
            "");
}

TEST(ProviderConfigTest, CaFileIsCheckedAtStartup) {
  ProviderConfig p = ParseGatewayConfig(kProvider).providers[0];
  const auto dir = std::filesystem::temp_directory_path() / "kinference-test-ca";
  std::filesystem::create_directories(dir);
  auto error_of = [&](const std::string& path) -> std::string {
    p.ca_file = path;
    try {
      CheckProviderCaFile(p, "providers[0]");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  p.ca_file.clear();
  EXPECT_EQ(error_of(""), "");  // the system trust store
  std::string missing = error_of((dir / "missing.pem").string());
  EXPECT_NE(missing.find("providers[0].ca_file"), std::string::npos) << missing;
  EXPECT_NE(missing.find("cannot read"), std::string::npos) << missing;
  const std::string junk = (dir / "junk.pem").string();
  { std::ofstream(junk) << "not a certificate\n"; }
  std::string no_cert = error_of(junk);
  EXPECT_NE(no_cert.find("providers[0].ca_file"), std::string::npos) << no_cert;
  EXPECT_NE(no_cert.find("no PEM certificate"), std::string::npos) << no_cert;
  // A real certificate loads.
  const std::string good = (dir / "good.pem").string();
  const std::string key = (dir / "key.pem").string();
  std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=t -keyout " + key +
                    " -out " + good + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(error_of(good), "");
  std::string key_only = error_of(key);  // PEM, but a private key
  EXPECT_NE(key_only.find("no PEM certificate"), std::string::npos) << key_only;
  std::filesystem::remove_all(dir);
}

TEST(CircuitBreakerTest, OpensAfterNFailuresAndHalfOpensAfterCooldown) {
  CircuitBreaker b(3, 10.0);
  EXPECT_FALSE(b.OnFailure(0));
  b.OnSuccess();  // a success resets the count
  EXPECT_FALSE(b.OnFailure(1));
  EXPECT_FALSE(b.OnFailure(2));
  EXPECT_TRUE(b.OnFailure(3));
  EXPECT_TRUE(b.open());
  EXPECT_FALSE(b.MaybeClose(12.9));
  EXPECT_TRUE(b.MaybeClose(13.0));
  EXPECT_FALSE(b.open());
  EXPECT_TRUE(b.OnFailure(14));  // half-open: one failure opens it again
  EXPECT_TRUE(b.MaybeClose(24));
  b.OnSuccess();
  EXPECT_FALSE(b.OnFailure(25));
  EXPECT_FALSE(b.open());
}

}  // namespace
}  // namespace kinference::gateway
