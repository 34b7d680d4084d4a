// Registers `kinference policy validate FILE...`: loads the files as one PolicySet and
// prints one summary line per policy (exit 0) or the field-path errors (exit 1).
// Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

#include "common/cli_exit.h"

namespace kinference::policy {
void RegisterCommand(CLI::App& app);
}  // namespace kinference::policy
