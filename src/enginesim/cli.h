// Registers the `kinference enginesim` subcommand. Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

#include "common/cli_exit.h"

namespace kinference::enginesim {
void RegisterCommand(CLI::App& app);
}  // namespace kinference::enginesim
