#include "gateway/cli.h"

namespace kinference::gateway {
void RegisterCommand(CLI::App& app) { (void)app; }
}  // namespace kinference::gateway
