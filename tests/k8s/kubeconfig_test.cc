#include "k8s/kubeconfig.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kinference::k8s {
namespace {

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("kubeconfig_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& file, const std::string& text) {
    auto p = (dir_ / file).string();
    std::ofstream(p) << text;
    return p;
  }
  std::filesystem::path dir_;
};

// "-----BEGIN CERTIFICATE-----\nX\n" in base64.
constexpr const char* kCaData = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClgK";

std::string Config(const std::string& cluster_extra, const std::string& user) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
         "clusters:\n- name: local\n  cluster:\n    server: https://127.0.0.1:6443\n" +
         cluster_extra +
         "contexts:\n- name: test\n  context: {cluster: local, user: admin, namespace: team-a}\n"
         "- name: other\n  context: {cluster: local, user: nobody}\n"
         "users:\n- name: admin\n  user:\n" +
         user;
}

TEST_F(KubeconfigTest, CurrentContextPicksClusterUserAndNamespace) {
  auto c = ParseKubeconfig(Config("    certificate-authority-data: " + std::string(kCaData) + "\n",
                                  "    token: abc123\n"),
                           "/x/kubeconfig");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->host, "127.0.0.1");
  EXPECT_EQ(c->port, 6443);
  EXPECT_TRUE(c->tls);
  EXPECT_EQ(c->ca_pem, "-----BEGIN CERTIFICATE-----\nX\n");
  EXPECT_EQ(c->token, "abc123");
  EXPECT_EQ(c->default_namespace, "team-a");
  EXPECT_EQ(c->source, "kubeconfig /x/kubeconfig (context test)");
}

TEST_F(KubeconfigTest, RelativeFilesResolveAgainstTheKubeconfigDirectory) {
  Write("cert.pem", "CERT");
  Write("key.pem", "KEY");
  auto path = Write("kubeconfig", Config("    certificate-authority: ca.crt\n",
                                         "    client-certificate: cert.pem\n"
                                         "    client-key: key.pem\n"
                                         "    tokenFile: token\n"));
  auto c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->ca_file, (dir_ / "ca.crt").string());
  EXPECT_EQ(c->token_file, (dir_ / "token").string());
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
}

TEST_F(KubeconfigTest, NamedContextOverridesCurrentContext) {
  auto c = ParseKubeconfig(Config("", "    token: t\n"), "k", "other");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->token, "");  // user "nobody" is not defined: anonymous
  EXPECT_EQ(c->default_namespace, "default");
}

TEST_F(KubeconfigTest, UnsupportedSettingsAreRefusedNamingTheField) {
  auto insecure =
      ParseKubeconfig(Config("    insecure-skip-tls-verify: true\n", "    token: t\n"), "k");
  ASSERT_FALSE(insecure.ok());
  EXPECT_NE(insecure.status().message().find("clusters[local].cluster.insecure-skip-tls-verify"),
            std::string::npos)
      << insecure.status().message();
  auto exec = ParseKubeconfig(Config("", "    exec: {command: aws}\n"), "k");
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.status().message().find("users[admin].user"), std::string::npos);
  auto half = ParseKubeconfig(
      Config("", "    client-certificate-data: " + std::string(kCaData) + "\n"), "k");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("client-key"), std::string::npos);
  auto missing = ParseKubeconfig(Config("", "    token: t\n"), "k", "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no context named 'nope'"), std::string::npos);
  auto bad_server = ParseKubeconfig(
      "current-context: c\ncontexts: [{name: c, context: {cluster: x}}]\n"
      "clusters: [{name: x, cluster: {server: 'ftp://h'}}]\n",
      "k");
  ASSERT_FALSE(bad_server.ok());
  EXPECT_NE(bad_server.status().message().find("server"), std::string::npos);
}

TEST_F(KubeconfigTest, ServerPathPrefixIsKept) {
  auto c = ParseKubeconfig(
      "current-context: c\ncontexts: [{name: c, context: {cluster: x}}]\n"
      "clusters: [{name: x, cluster: {server: 'http://proxy:8080/k8s/clusters/c1/'}}]\n",
      "k");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->tls);
  EXPECT_EQ(c->port, 8080);
  EXPECT_EQ(c->path_prefix, "/k8s/clusters/c1");
}

TEST_F(KubeconfigTest, InClusterReadsTheServiceAccountDirectory) {
  Write("token", "tok\n");
  Write("ca.crt", "CA");
  Write("namespace", "kinference-system\n");
  auto c = InClusterConfig("10.96.0.1", "443", dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->host, "10.96.0.1");
  EXPECT_EQ(c->port, 443);
  EXPECT_EQ(c->token_file, (dir_ / "token").string());
  EXPECT_EQ(c->ca_file, (dir_ / "ca.crt").string());
  EXPECT_EQ(c->default_namespace, "kinference-system");
  auto v6 = InClusterConfig("fd00::1", "443", dir_.string());
  ASSERT_TRUE(v6.ok()) << v6.status().message();
  EXPECT_EQ(v6->host, "fd00::1");
  EXPECT_FALSE(InClusterConfig("", "", dir_.string()).ok());
  EXPECT_FALSE(InClusterConfig("10.0.0.1", "443", (dir_ / "missing").string()).ok());
}

TEST(Base64Test, DecodesStandardAlphabetWithAndWithoutPadding) {
  std::string out;
  ASSERT_TRUE(Base64Decode("aGVsbG8=", out));
  EXPECT_EQ(out, "hello");
  ASSERT_TRUE(Base64Decode("aGVsbG8", out));
  EXPECT_EQ(out, "hello");
  ASSERT_TRUE(Base64Decode("aGVs\nbG8h", out));
  EXPECT_EQ(out, "hello!");
  EXPECT_FALSE(Base64Decode("aGV*", out));
  EXPECT_FALSE(Base64Decode("aG=Vs", out));
}

}  // namespace
}  // namespace kinference::k8s
