// Registers the `kinference simulate` subcommand (sim/scenarios.h, docs/simulator.md).
// Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

#include "common/cli_exit.h"

namespace kinference::sim {
void RegisterCommand(CLI::App& app);
}  // namespace kinference::sim
