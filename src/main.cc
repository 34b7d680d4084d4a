// kinference: one binary, one subcommand per shell (gateway, engine-sim, simulate, bench).
// Each shell registers its own subcommand and options (see its cli.h).
#include <CLI/CLI.hpp>

#include "bench/cli.h"
#include "common/build_info.h"
#include "controller/cli.h"
#include "enginesim/cli.h"
#include "gateway/cli.h"
#include "gateway/config/policy_cli.h"
#include "ledger/usage_cli.h"
#include "sim/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"kinference: TTFT-aware inference routing for vLLM"};
  app.set_version_flag("--version", kinference::VersionLine(),
                       "Print version, git commit and build type, then exit");
  app.require_subcommand(1);
  kinference::gateway::RegisterCommand(app);
  kinference::enginesim::RegisterCommand(app);
  kinference::sim::RegisterCommand(app);
  kinference::bench::RegisterCommand(app);
  kinference::gateway::RegisterPolicyCommand(app);
  kinference::ledger::RegisterUsageCommand(app);
  kinference::controller::RegisterCommand(app);
  CLI11_PARSE(app, argc, argv);
  return kinference::ExitCode();
}
