#include "common/build_info.h"

#include <fmt/format.h>

#include "common/prometheus_text.h"

namespace kinference {
namespace build_info_gen {
// Defined in the file cmake/build_info.cmake writes into the build directory.
extern const char kVersion[];
extern const char kGitCommit[];
extern const char kBuildType[];
}  // namespace build_info_gen

const BuildInfo& GetBuildInfo() {
  static const BuildInfo info{build_info_gen::kVersion, build_info_gen::kGitCommit,
                              build_info_gen::kBuildType};
  return info;
}

std::string VersionLine() {
  const BuildInfo& b = GetBuildInfo();
  return fmt::format("kinference {} (commit {}, {})", b.version, b.git_commit,
                     b.build_type.empty() ? "no build type" : b.build_type);
}

std::string BuildInfoExposition() {
  const BuildInfo& b = GetBuildInfo();
  return fmt::format(
      "# HELP kinference_build_info Kinference build: version, git commit (revision) and "
      "build type; always 1.\n"
      "# TYPE kinference_build_info gauge\n"
      "kinference_build_info{{version=\"{}\",revision=\"{}\",build_type=\"{}\"}} 1\n",
      EscapeLabelValue(std::string(b.version)), EscapeLabelValue(std::string(b.git_commit)),
      EscapeLabelValue(std::string(b.build_type)));
}

}  // namespace kinference
