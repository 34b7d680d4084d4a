// `kinference policy validate` as a real process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

CliRun Validate(const std::string& args) {
  const char* bin = std::getenv("KINFERENCE_BIN");
  EXPECT_NE(bin, nullptr);
  std::string cmd = std::string(bin ? bin : "kinference") + " policy validate " + args + " 2>&1";
  CliRun r;
  FILE* f = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  int status = pclose(f);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kExamples = std::string(KINFERENCE_SOURCE_DIR) + "/examples/policies/";

TEST(PolicyValidateCli, ValidFilesExitZeroWithOneLinePerPolicy) {
  CliRun r =
      Validate(kExamples + "pii-local-only.yaml " + kExamples + "simple-cheaper-model.yaml " +
               kExamples + "local-queue-before-providers.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pii-local-only: priority=100 mode=enforce match[tags.anyOf=pii]"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("simple-to-small-model: priority=10"), std::string::npos);
  EXPECT_NE(r.output.find("3 policies valid in 3 files"), std::string::npos);
}

TEST(PolicyValidateCli, InvalidFileExitsOneWithFieldPath) {
  auto path = std::filesystem::temp_directory_path() /
              ("bad_policy_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\n"
                         "metadata: {name: bad}\nspec:\n  constraints:\n    exclude:\n"
                         "      classes: [cloud]\n";
  CliRun r = Validate(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(
      r.output.find(path.string() + ": spec.constraints.exclude.classes[0]: unknown class 'cloud' "
                                    "(expected local|provider)"),
      std::string::npos)
      << r.output;
}

}  // namespace
