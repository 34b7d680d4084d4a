#include "gateway/cli.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cmath>
#include <csignal>
#include <functional>
#include <iostream>
#include <optional>

#include "gateway/config/config.h"
#include "gateway/config/config_fields.h"
#include "gateway/gateway.h"

namespace kinference::gateway {
namespace {

// --drain-timeout-s is checked as the config's drain_timeout_s is (config_fields::DurationS,
// zero allowed), with the same messages: a number of seconds, >= 0, finite, at most one
// week (1e10 s would overflow the drain deadline's clock; nan and inf are no durations).
// A failure is a CLI11 ValidationError: "--drain-timeout-s: <message>", as for any CLI error.
CLI::Validator DrainTimeoutSValidator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "expected seconds, got '" + text + "'";
        if (!(v >= 0)) return "must be >= 0";
        if (!std::isfinite(v)) return "must be finite";
        if (v > config_fields::kMaxDurationS) return "must be at most 604800 s (one week)";
        return {};
      },
      "SECONDS in [0, 604800]", "DrainTimeoutS");
}

// `cli_drain_timeout_s`: --drain-timeout-s when given (overrides the config's
// drain_timeout_s; config.h).
int Run(const std::string& config_path, std::optional<double> cli_drain_timeout_s) {
  // Logs go to stderr; stdout carries only the "listening" line that tools wait for.
  spdlog::set_default_logger(spdlog::stderr_color_mt("gateway"));
  GatewayConfig config;
  try {
    config = LoadGatewayConfig(config_path);
  } catch (const ConfigError& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
  const double drain_timeout_s = EffectiveDrainTimeoutS(config, cli_drain_timeout_s);
  boost::asio::io_context io(1);
  std::unique_ptr<Gateway> gateway;
  try {
    gateway = std::make_unique<Gateway>(io, config);
  } catch (const ConfigError& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
  auto port = gateway->Start();
  if (!port.ok()) {
    spdlog::error("gateway: {}", port.status().message());
    return 1;
  }
  // First SIGTERM/SIGINT: graceful drain (Kubernetes sends SIGTERM, then SIGKILL after
  // terminationGracePeriodSeconds, default 30 s); a second signal exits at once.
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  auto exit_now = [&] {
    signals.cancel();
    io.stop();
  };
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    spdlog::info("gateway: draining (up to {} s); signal again to exit at once", drain_timeout_s);
    signals.async_wait([&](const boost::system::error_code& ec2, int) {
      if (ec2) return;
      spdlog::info("gateway: second signal; exiting");
      gateway->Stop();
      exit_now();
    });
    gateway->Drain(drain_timeout_s, exit_now);
  });
  // SIGHUP: reload the policy files now (an invalid set is logged; the last valid stays).
  boost::asio::signal_set hup(io, SIGHUP);
  std::function<void()> wait_hup = [&] {
    hup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      gateway->ReloadPolicies();
      wait_hup();
    });
  };
  wait_hup();
  // Ready only now that the signal handlers are in place: a supervisor (or test) that
  // signals as soon as it reads this line gets the graceful drain, not the default action.
  std::cout << "gateway listening on " << config.listen_address << ":" << *port << std::endl;
  io.run();
  return 0;
}

}  // namespace

void RegisterCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("gateway", "OpenAI-compatible gateway routing to vLLM pools");
  auto path = std::make_shared<std::string>();
  auto drain_timeout_s = std::make_shared<double>(0.0);
  cmd->add_option("--config", *path, "gateway YAML config (see examples/gateway.yaml)")->required();
  // Given: overrides the config's drain_timeout_s (default 30 s; config.h).
  auto* drain =
      cmd->add_option("--drain-timeout-s", *drain_timeout_s,
                      "on SIGTERM/SIGINT, seconds to let in-flight requests finish before "
                      "exiting; overrides the config's drain_timeout_s (default 30)")
          ->check(DrainTimeoutSValidator());
  cmd->callback([path, drain_timeout_s, drain] {
    std::optional<double> cli;
    if (drain->count() > 0) cli = *drain_timeout_s;
    SetExitCode(Run(*path, cli));
  });
}

}  // namespace kinference::gateway
