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

std::string TempFile(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() /
              ("cli_policy_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(PolicyValidateCli, EmptyOrCommentOnlyFileExitsOne) {
  auto empty = TempFile("empty.yaml", "");
  auto comments = TempFile("comments.yaml", "# to do\n");
  for (const auto& path : {empty, comments}) {
    CliRun r = Validate(path);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(path + ": no InferencePolicy documents"), std::string::npos)
        << r.output;
  }
  std::filesystem::remove(empty);
  std::filesystem::remove(comments);
}

TEST(PolicyValidateCli, GatewayConfigChecksReferences) {
  auto gw =
      TempFile("gw.yaml", "pools: [{name: a, model: m, endpoints: [\"http://127.0.0.1:8001\"]}]\n");
  auto policy = TempFile("refs.yaml",
                         "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\n"
                         "metadata: {name: refs}\nspec:\n  match: {models: [later]}\n"
                         "  constraints: {include: {pools: [b]}}\n");
  CliRun without = Validate(policy);  // no gateway config: references unknown
  EXPECT_EQ(without.exit_code, 0) << without.output;
  CliRun with = Validate("--gateway-config " + gw + " " + policy);
  EXPECT_EQ(with.exit_code, 1) << with.output;
  EXPECT_NE(
      with.output.find("spec.constraints.include.pools[0]: unknown pool 'b' (gateway has: a)"),
      std::string::npos)
      << with.output;
  EXPECT_NE(with.output.find("warning: " + policy +
                             ": policy refs: spec.match.models[0]: no endpoint serves model "
                             "'later'"),
            std::string::npos)
      << with.output;
  std::ofstream(policy)
      << "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\n"
         "metadata: {name: refs}\nspec:\n  constraints: {include: {pools: [a]}}\n";
  CliRun ok = Validate("--gateway-config " + gw + " " + policy);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  std::filesystem::remove(gw);
  std::filesystem::remove(policy);
}

}  // namespace
