#include "enginesim/cli.h"

namespace kinference::enginesim {
void RegisterCommand(CLI::App& app) { (void)app; }
}  // namespace kinference::enginesim
