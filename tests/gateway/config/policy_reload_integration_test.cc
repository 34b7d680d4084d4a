// InferencePolicy in the real `kinference gateway` process: policy files named relative
// to the config file, SIGHUP reload (a valid change bumps the generation and changes the
// decision; an invalid file keeps the last valid set), and a bad policy file at start-up.
// The pool points at a port nothing listens on: with one slow scrape it stays "healthy",
// so every request reaches policy evaluation and is rejected (403) naming the policy.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "http/client.h"
#include "testing/process.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using kinference::testing::ChildProcess;

// Rejects every request: the gateway has no provider. (Naming an unknown provider would
// be a reference error.)
std::string Policy(const std::string& name) {
  return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: " + name +
         "}\nspec:\n  constraints: {include: {classes: [provider]}}\n";
}

class PolicyIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(kinference::testing::KinferenceBin().empty()) << "KINFERENCE_BIN not set";
    dir_ = ::testing::TempDir() + "/kinference-policy-it-" + std::to_string(getpid());
    fs::create_directories(dir_ + "/policies");
    // A free port nobody listens on.
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(
        io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    dead_port_ = a.local_endpoint().port();
  }
  void TearDown() override {
    gateway_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void WritePolicy(const std::string& text) { std::ofstream(dir_ + "/policies/p.yaml") << text; }
  std::string WriteConfig() {
    std::string path = dir_ + "/gateway.yaml";
    std::ofstream(path) << "listen: {address: 127.0.0.1, port: 0}\n"
                        << "scrape_interval_s: 600\n"  // one failed scrape: stays healthy
                        << "pools: [{name: p, model: m, endpoints: [\"http://127.0.0.1:"
                        << dead_port_ << "\"]}]\n"
                        << "policies: {files: [policies/p.yaml], reload_interval_s: 0}\n";
    return path;
  }
  http::Response Call(const std::string& method, const std::string& target,
                      const std::string& body = "") {
    http::ClientRequest r;
    r.method = method;
    r.port = gateway_->port();
    r.target = target;
    r.body = body;
    r.header_timeout_s = 30;
    auto res = http::FetchSync(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : http::Response{};
  }
  http::Response Chat() {
    return Call("POST", "/v1/chat/completions",
                R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  }
  std::string Metrics() { return Call("GET", "/metrics").body; }
  static bool WaitUntil(const std::function<bool()>& f) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);  // hang guard only
    while (std::chrono::steady_clock::now() < deadline) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::string dir_;
  uint16_t dead_port_ = 0;
  std::unique_ptr<ChildProcess> gateway_;
};

TEST_F(PolicyIntegrationTest, SighupReloadsAndInvalidFileKeepsLastValidSet) {
  WritePolicy(Policy("v-one"));
  std::string error;
  gateway_ = ChildProcess::Start(
      {kinference::testing::KinferenceBin(), "gateway", "--config", WriteConfig()}, "listening on",
      60, &error);
  ASSERT_TRUE(gateway_) << error;

  auto r = Chat();
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("policy 'v-one'"), std::string::npos) << r.body;
  EXPECT_NE(std::string(r.headers.Find("x-kinference-decision")).find("generation=1"),
            std::string::npos);
  EXPECT_NE(Metrics().find("\nkinference_policy_generation 1\n"), std::string::npos);

  WritePolicy(Policy("v-two-changed"));
  ASSERT_EQ(kill(gateway_->pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(
      [&] { return Metrics().find("\nkinference_policy_generation 2\n") != std::string::npos; }));
  r = Chat();
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("policy 'v-two-changed'"), std::string::npos) << r.body;
  EXPECT_NE(std::string(r.headers.Find("x-kinference-decision")).find("generation=2"),
            std::string::npos);

  WritePolicy("kind: InferencePolicy\nspec: {mode: sometimes}\n");
  ASSERT_EQ(kill(gateway_->pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil([&] {
    return Metrics().find("\nkinference_policy_reload_failures_total 1\n") != std::string::npos;
  }));
  EXPECT_NE(Metrics().find("\nkinference_policy_generation 2\n"), std::string::npos);
  r = Chat();
  EXPECT_NE(r.body.find("policy 'v-two-changed'"), std::string::npos) << r.body;
  EXPECT_TRUE(gateway_->Running());

  auto decisions = json::parse(Call("GET", "/debug/decisions").body).at("decisions").as_array();
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[0].at("generation").to_number<int>(), 1);
  EXPECT_EQ(decisions[2].at("outcome").as_string(), "rejected");
  EXPECT_EQ(decisions[2].at("generation").to_number<int>(), 2);
}

TEST_F(PolicyIntegrationTest, BadPolicyFileStopsStartup) {
  WritePolicy(Policy("ok") + "  extra: 1\n");  // unknown field spec.extra
  std::string error;
  gateway_ = ChildProcess::Start(
      {kinference::testing::KinferenceBin(), "gateway", "--config", WriteConfig()}, "listening on",
      30, &error);
  EXPECT_FALSE(gateway_);
}

}  // namespace
}  // namespace kinference::gateway
