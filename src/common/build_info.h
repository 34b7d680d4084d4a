// What this binary is: Kinference's version, the git commit it was built from and the CMake
// build type. `kinference --version` prints them and the gateway exports them as the
// `kinference_build_info` gauge (the Prometheus convention for build metadata: value 1,
// the facts as labels, as prometheus_build_info does).
//
// Sources: the version is CMake's project(VERSION); the commit is `git rev-parse HEAD` of
// the source tree, taken at build time by cmake/build_info.cmake (suffix "-dirty" when
// tracked files differ from it; "unknown" without git); the build type is
// CMAKE_BUILD_TYPE at configure time.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <string>
#include <string_view>

namespace kinference {

struct BuildInfo {
  std::string_view version;     // e.g. "0.1.0"
  std::string_view git_commit;  // 40 hex digits, optionally "-dirty"; or "unknown"
  std::string_view build_type;  // e.g. "RelWithDebInfo"
};

const BuildInfo& GetBuildInfo();

// One line for `--version`: "kinference 0.1.0 (commit 0123abcd..., RelWithDebInfo)".
std::string VersionLine();

// The kinference_build_info gauge in Prometheus text format (HELP, TYPE and one sample
// with labels version, revision, build_type; value 1).
std::string BuildInfoExposition();

}  // namespace kinference
