// Registers `kinference policy validate [--gateway-config FILE] FILE...`: loads the files
// as one PolicySet and prints one summary line per policy (exit 0) or the field-path
// errors (exit 1). With --gateway-config, pools, providers and alternative models named
// by the policies must exist in that gateway config (errors, exit 1); unknown
// match.models are printed as warnings (policy/references.h). Part of the gateway shell
// because --gateway-config reads a gateway config; the policy library stays a core.
// Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

#include "common/cli_exit.h"

namespace kinference::gateway {
void RegisterPolicyCommand(CLI::App& app);
}  // namespace kinference::gateway
