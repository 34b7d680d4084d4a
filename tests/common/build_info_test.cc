// Build info names this source tree's version and commit; `kinference --version` prints it.
#include "common/build_info.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "testing/process.h"

namespace kinference {
namespace {

// stdout of `cmd` and its exit status.
std::pair<std::string, int> RunCommand(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {"", -1};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {out, status};
}

TEST(BuildInfo, VersionIsTheProjectVersion) {
  EXPECT_EQ(GetBuildInfo().version, KINFERENCE_PROJECT_VERSION);
  EXPECT_EQ(GetBuildInfo().build_type, KINFERENCE_BUILD_TYPE);
}

TEST(BuildInfo, CommitIsTheSourceTreeHead) {
  auto [head, status] = RunCommand("git -C '" KINFERENCE_SOURCE_DIR "' rev-parse HEAD 2>/dev/null");
  std::string commit(GetBuildInfo().git_commit);
  if (status != 0) {
    EXPECT_EQ(commit, "unknown") << "no git here, so the build could not know its commit";
    return;
  }
  while (!head.empty() && head.back() == '\n') head.pop_back();
  ASSERT_EQ(head.size(), 40u);
  // "-dirty" when tracked files were modified at build time.
  EXPECT_TRUE(commit == head || commit == head + "-dirty") << commit << " vs HEAD " << head;
}

TEST(BuildInfo, ExpositionIsOneGaugeSampleWithTheFactsAsLabels) {
  const BuildInfo& b = GetBuildInfo();
  std::string text = BuildInfoExposition();
  EXPECT_NE(text.find("# TYPE kinference_build_info gauge\n"), std::string::npos) << text;
  std::string sample = "kinference_build_info{version=\"" + std::string(b.version) +
                       "\",revision=\"" + std::string(b.git_commit) + "\",build_type=\"" +
                       std::string(b.build_type) + "\"} 1\n";
  EXPECT_NE(text.find(sample), std::string::npos) << text;
}

TEST(BuildInfo, VersionFlagPrintsTheVersionLineAndExitsZero) {
  std::string bin = testing::KinferenceBin();
  ASSERT_FALSE(bin.empty()) << "KINFERENCE_BIN not set";
  auto [out, status] = RunCommand("'" + bin + "' --version");
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, VersionLine() + "\n");
  EXPECT_NE(out.find(std::string(GetBuildInfo().git_commit)), std::string::npos);
}

}  // namespace
}  // namespace kinference
