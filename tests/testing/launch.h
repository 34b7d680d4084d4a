// Test helper: starts `kinference <args>` (the binary under test, $KINFERENCE_BIN) as a
// child process and waits up to 60 s for its "listening on" line. A start failure is a
// test failure (EXPECT) and returns null, so fixtures can ASSERT on the pointer later.
//
// Thread-safety: call from the test thread.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "testing/process.h"

namespace kinference::testing {

inline std::unique_ptr<ChildProcess> LaunchKinference(std::vector<std::string> args) {
  args.insert(args.begin(), KinferenceBin());
  std::string error;
  auto p = ChildProcess::Start(args, "listening on", 60, &error);
  EXPECT_TRUE(p) << error;
  return p;
}

}  // namespace kinference::testing
