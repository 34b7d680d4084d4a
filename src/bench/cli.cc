#include "bench/cli.h"

namespace kinference::bench {
void RegisterCommand(CLI::App& app) { (void)app; }
}  // namespace kinference::bench
