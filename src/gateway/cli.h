// Registers the `kinference gateway` subcommand. Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

#include "common/cli_exit.h"

namespace kinference::gateway {
void RegisterCommand(CLI::App& app);
}  // namespace kinference::gateway
