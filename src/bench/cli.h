// Registers the `kinference bench` subcommand. Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

#include "common/cli_exit.h"

namespace kinference::bench {
void RegisterCommand(CLI::App& app);
}  // namespace kinference::bench
