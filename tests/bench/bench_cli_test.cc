// `kinference bench` end to end against a real `kinference engine-sim` process: the CLI,
// the workloads on the wire, usage accounting (prefix-cache hits), the summary file and
// `bench table`. Asserts counts and cache behaviour, never wall-clock times.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "testing/process.h"

namespace kinference::bench {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class BenchCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string bin = testing::KinferenceBin();
    ASSERT_FALSE(bin.empty()) << "KINFERENCE_BIN not set";
    std::string error;
    // Time scale 100: the runs below take well under a second of wall time each.
    engine_ =
        testing::ChildProcess::Start({bin, "engine-sim", "--port", "0", "--time-scale", "100"},
                                     "engine-sim listening on", 30, &error);
    ASSERT_NE(engine_, nullptr) << error;
    dir_ = fs::temp_directory_path() / ("kinference_bench_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  static void TearDownTestSuite() {
    engine_.reset();
    fs::remove_all(dir_);
  }

  // Runs `kinference <args>`; returns the exit status and leaves stdout in dir_/stdout.
  static int Kinference(const std::string& args) {
    std::string cmd = testing::KinferenceBin() + " " + args + " >" + (dir_ / "stdout").string();
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  static std::string Target() { return "http://127.0.0.1:" + std::to_string(engine_->port()); }
  static boost::json::object Result(const std::string& workload) {
    auto doc = boost::json::parse(ReadFile(dir_ / "summary.json")).as_object();
    for (const auto& r : doc.at("results").as_array()) {
      if (r.at("workload").as_string() == workload) return r.as_object();
    }
    ADD_FAILURE() << "no result for " << workload;
    return {};
  }

  static inline std::unique_ptr<testing::ChildProcess> engine_;
  static inline fs::path dir_;
};

TEST_F(BenchCliTest, MultiturnReusesTheConversationPrefix) {
  ASSERT_EQ(Kinference("bench --target " + Target() +
                       " --workload multiturn --sessions 1 --concurrency 1 --time-scale 100"
                       " --strategy direct-test --summary " +
                       (dir_ / "summary.json").string() + " --out " + (dir_ / "out").string()),
            0);
  auto r = Result("multiturn");
  EXPECT_EQ(r.at("requests").as_int64(), 8);
  EXPECT_EQ(r.at("errors").as_int64(), 0);
  EXPECT_EQ(r.at("strategy").as_string(), "direct-test");
  EXPECT_EQ(r.at("completion_tokens").as_int64(), 8 * 160);  // workload::kMultiturnOutputTokens
  EXPECT_DOUBLE_EQ(r.at("time_scale").as_double(), 100.0);
  // Turns 2..8 re-send the whole history: most prompt tokens come from the prefix cache.
  EXPECT_GT(r.at("cached_token_ratio").as_double(), 0.5);
  EXPECT_GT(r.at("ttft_p50_s").as_double(), 0.0);
  // One JSONL line per request, turns in order.
  std::ifstream f(dir_ / "out" / "multiturn_direct-test.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    auto o = boost::json::parse(line).as_object();
    EXPECT_EQ(o.at("turn").as_int64(), n);
    EXPECT_TRUE(o.at("error").is_null());
    if (n > 0) {
      EXPECT_GT(o.at("cached_tokens").as_int64(), 0) << line.substr(0, 300);
    }
    ++n;
  }
  EXPECT_EQ(n, 8);
}

TEST_F(BenchCliTest, IndependentOpenLoopHasNoCacheHitsAndTableShowsBothRuns) {
  ASSERT_EQ(Kinference("bench --target " + Target() +
                       " --workload independent --sessions 3 --rate 1 --time-scale 100"
                       " --strategy random --summary " +
                       (dir_ / "summary.json").string()),
            0);
  auto r = Result("independent");
  EXPECT_EQ(r.at("requests").as_int64(), 3);
  EXPECT_EQ(r.at("errors").as_int64(), 0);
  EXPECT_GE(r.at("prompt_tokens").as_int64(), 3 * 16256);
  EXPECT_LT(r.at("cached_token_ratio").as_double(), 0.05);

  ASSERT_EQ(Kinference("bench table --summary " + (dir_ / "summary.json").string()), 0);
  std::string table = ReadFile(dir_ / "stdout");
  EXPECT_NE(table.find("independent"), std::string::npos) << table;
  EXPECT_NE(table.find("TTFT p50"), std::string::npos) << table;
}

TEST_F(BenchCliTest, UnreachableTargetFailsEveryRequest) {
  // Port 1 on loopback: nothing listens there (connection refused).
  EXPECT_NE(Kinference("bench --target http://127.0.0.1:1 --model m --workload independent"
                       " --sessions 1 --concurrency 1"),
            0);
  EXPECT_NE(Kinference("bench table --summary " + (dir_ / "missing.json").string()), 0);
}

}  // namespace
}  // namespace kinference::bench
