// The drain grace of the real `kinference gateway` process: the config's drain_timeout_s,
// overridden by --drain-timeout-s when that is given on the command line (config.h). The
// gateway logs the grace it uses on SIGTERM ("draining (up to S s)"); its stderr goes to a
// file through `sh -c 'exec ...'` (same pid, so the signal reaches the gateway itself).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "testing/process.h"

namespace kinference::gateway {
namespace {

namespace fs = std::filesystem;
using kinference::testing::ChildProcess;

class DrainCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(kinference::testing::KinferenceBin().empty()) << "KINFERENCE_BIN not set";
    dir_ = ::testing::TempDir() + "/kinference-drain-cli-" + std::to_string(getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Starts the gateway with `config_extra` in its config and `flags` on its command line,
  // stops it with SIGTERM (nothing in flight: it exits at once) and returns its stderr.
  std::string RunAndDrain(const std::string& config_extra, const std::string& flags) {
    std::string config = dir_ + "/gateway.yaml";
    std::ofstream(config) << "listen: {address: 127.0.0.1, port: 0}\n"
                          << "scrape_interval_s: 600\n"
                          // Never called (no request is sent); port 1: nothing listens.
                          << "pools: [{name: p, model: m, endpoints: [\"http://127.0.0.1:1\"]}]\n"
                          << config_extra;
    std::string log = dir_ + "/stderr.log";
    fs::remove(log);
    std::string cmd = "exec '" + kinference::testing::KinferenceBin() + "' gateway --config '" +
                      config + "' " + flags + " 2>'" + log + "'";
    std::string error;
    auto gateway = ChildProcess::Start({"/bin/sh", "-c", cmd}, "listening on", 60, &error);
    EXPECT_TRUE(gateway) << error;
    if (!gateway) return "";
    int status = gateway->Stop(10);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    std::stringstream ss;
    ss << std::ifstream(log).rdbuf();
    return ss.str();
  }

  std::string dir_;
};

TEST_F(DrainCliTest, ConfigValueUsedWithoutTheFlag) {
  std::string log = RunAndDrain("drain_timeout_s: 7.5\n", "");
  EXPECT_NE(log.find("draining (up to 7.5 s)"), std::string::npos) << log;
}

TEST_F(DrainCliTest, DefaultIs30) {
  std::string log = RunAndDrain("", "");
  EXPECT_NE(log.find("draining (up to 30 s)"), std::string::npos) << log;
}

TEST_F(DrainCliTest, FlagGivenOverridesTheConfig) {
  std::string log = RunAndDrain("drain_timeout_s: 7.5\n", "--drain-timeout-s 2.5");
  EXPECT_NE(log.find("draining (up to 2.5 s)"), std::string::npos) << log;
  // Even when the flag's value is the old built-in default, or 0.
  log = RunAndDrain("drain_timeout_s: 7.5\n", "--drain-timeout-s 30");
  EXPECT_NE(log.find("draining (up to 30 s)"), std::string::npos) << log;
  log = RunAndDrain("drain_timeout_s: 7.5\n", "--drain-timeout-s 0");
  EXPECT_NE(log.find("draining (up to 0 s)"), std::string::npos) << log;
}

}  // namespace
}  // namespace kinference::gateway
