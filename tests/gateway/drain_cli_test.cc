// The drain grace of the real `kinference gateway` process: the config's drain_timeout_s,
// overridden by --drain-timeout-s when that is given on the command line (config.h). The
// gateway logs the grace it uses on SIGTERM ("draining (up to S s)"); its stderr goes to a
// file through `sh -c 'exec ...'` (same pid, so the signal reaches the gateway itself).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/Error.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

  // Runs the gateway with `flags`, expecting it to refuse them and exit at once (bounded
  // by timeout(1): a gateway that accepted them would serve until killed, exit 124);
  // returns its exit code and its stderr.
  std::pair<int, std::string> RunExpectingExit(const std::string& flags) {
    std::string config = dir_ + "/gateway.yaml";
    std::ofstream(config) << "listen: {address: 127.0.0.1, port: 0}\n"
                          << "pools: [{name: p, model: m, endpoints: [\"http://127.0.0.1:1\"]}]\n";
    std::string cmd = "timeout -k 5 20 '" + kinference::testing::KinferenceBin() +
                      "' gateway --config '" + config + "' " + flags + " 2>&1 >/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return {-1, "popen failed"};
    std::string out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
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

// --drain-timeout-s is checked as the config's drain_timeout_s: finite, >= 0, at most one
// week (604800 s), with the config's messages; a bad value is a CLI usage error (CLI11's
// ValidationError exit code, as for any refused option value), before anything starts.
TEST_F(DrainCliTest, FlagIsValidatedLikeTheConfigKey) {
  const int usage_error = static_cast<int>(CLI::ExitCodes::ValidationError);
  for (auto [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"nan", "must be >= 0"},
           {"-1", "must be >= 0"},
           {"inf", "must be finite"},
           {"1e12", "must be at most 604800 s (one week)"},
           {"1e10", "must be at most 604800 s (one week)"},
           {"604800.5", "must be at most 604800 s (one week)"}}) {
    auto [code, out] = RunExpectingExit("--drain-timeout-s " + value);
    EXPECT_EQ(code, usage_error) << value << ": " << out;
    EXPECT_NE(out.find("--drain-timeout-s: " + message), std::string::npos) << value << ": " << out;
    EXPECT_EQ(out.find("17976931348623157"), std::string::npos) << out;  // no DBL_MAX
  }
  // The bounds themselves are fine.
  std::string log = RunAndDrain("", "--drain-timeout-s 604800");
  EXPECT_NE(log.find("draining (up to 604800 s)"), std::string::npos) << log;
}

}  // namespace
}  // namespace kinference::gateway
