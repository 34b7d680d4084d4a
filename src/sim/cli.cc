#include "sim/cli.h"

namespace kinference::sim {
void RegisterCommand(CLI::App& app) { (void)app; }
}  // namespace kinference::sim
