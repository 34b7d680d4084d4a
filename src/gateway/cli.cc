#include "gateway/cli.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cmath>
#include <csignal>
#include <functional>
#include <iostream>
#include <optional>

#include "common/logging.h"
#include "gateway/config/config.h"
#include "gateway/config/config_fields.h"
#include "gateway/config/config_keys.h"
#include "gateway/gateway.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"

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

struct CliOptions {
  std::string config_path;
  std::optional<double> drain_timeout_s;  // --drain-timeout-s when given
  bool kubernetes = false;
  std::string kubeconfig;
  std::string context;
  std::string ns;
  std::string log_format;  // --log-format; empty: the config's log_format
  std::string log_level;   // --log-level; empty: the config's log_level
};

// `cli.drain_timeout_s` overrides the config's drain_timeout_s (config.h); `cli.log_format`
// and `cli.log_level` the config's log_format and log_level.
int Run(const CliOptions& cli) {
  // Logs go to stderr; stdout carries only the "listening" line that tools wait for.
  // Text at info until the config says otherwise (its own errors are logged so).
  ConfigureLogging("gateway", {});
  GatewayConfig config;
  const ConfigMode mode = cli.kubernetes ? ConfigMode::kKubernetes : ConfigMode::kFile;
  try {
    config = cli.config_path.empty() ? ParseGatewayConfig("{}", mode)
                                     : LoadGatewayConfig(cli.config_path, mode);
  } catch (const ConfigError& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
  std::optional<k8s::ClusterConfig> cluster;
  if (cli.kubernetes) {
    auto resolved = k8s::ResolveClusterConfig(cli.kubeconfig, cli.context);
    if (!resolved.ok()) {
      spdlog::error("{}", resolved.status().message());
      return 2;
    }
    cluster = std::move(*resolved);
  }
  auto format = ParseLogFormat(cli.log_format.empty() ? config.log_format : cli.log_format);
  auto level = ParseLogLevel(cli.log_level.empty() ? config.log_level : cli.log_level);
  if (!format.ok() || !level.ok()) {
    spdlog::error("{}", (!format.ok() ? format.status() : level.status()).message());
    return 2;
  }
  ConfigureLogging("gateway", {*format, *level});
  const double drain_timeout_s = EffectiveDrainTimeoutS(config, cli.drain_timeout_s);
  boost::asio::io_context io(1);
  std::unique_ptr<Gateway> gateway;
  try {
    gateway = std::make_unique<Gateway>(io, config);
  } catch (const ConfigError& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
  if (cluster) {
    std::string ns = cli.ns.empty() ? cluster->default_namespace : cli.ns;
    gateway->UseKubernetes(std::make_shared<k8s::RestClient>(io.get_executor(), *cluster),
                           std::move(ns));
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
  // SIGUSR1: one log level more verbose (info -> debug -> trace); SIGUSR2: one less.
  boost::asio::signal_set usr(io, SIGUSR1, SIGUSR2);
  std::function<void()> wait_usr = [&] {
    usr.async_wait([&](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      LogLevel now = StepLogLevel(signo == SIGUSR1 ? 1 : -1);
      LogEvent(LogLevel::kWarn, "gateway", "log level changed",
               {{"log_level", std::string(LogLevelName(now))}, {"signal", int64_t{signo}}});
      wait_usr();
    });
  };
  wait_usr();
  // Ready only now that the signal handlers are in place: a supervisor (or test) that
  // signals as soon as it reads this line gets the graceful drain, not the default action.
  if (auto admin = gateway->AdminPort())
    std::cout << "gateway admin listening on " << config.admin_listen->address << ":" << *admin
              << std::endl;
  std::cout << "gateway listening on " << config.listen_address << ":" << *port << std::endl;
  io.run();
  // Stopped here, while the signal sets still exist: destroyed, they would restore the
  // default action, and a second SIGTERM arriving during the stop (ledger records still
  // being written) would kill the process; now it is caught and ignored.
  gateway.reset();
  return 0;
}

}  // namespace

void RegisterCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("gateway", "OpenAI-compatible gateway routing to vLLM pools");
  auto cli = std::make_shared<CliOptions>();
  auto drain_timeout_s = std::make_shared<double>(0.0);
  auto* config = cmd->add_option("--config", cli->config_path,
                                 "gateway YAML config (see examples/gateway.yaml); optional with "
                                 "--kubernetes");
  // Given: overrides the config's drain_timeout_s (default 30 s; config.h).
  auto* drain =
      cmd->add_option("--drain-timeout-s", *drain_timeout_s,
                      "on SIGTERM/SIGINT, seconds to let in-flight requests finish before "
                      "exiting; overrides the config's drain_timeout_s (default 30)")
          ->check(DrainTimeoutSValidator());
  auto* kubernetes = cmd->add_flag(
      "--kubernetes", cli->kubernetes,
      "also take pools (InferencePool), providers, tenants and policies (kinference.io) from "
      "the cluster, live (gateway/kubernetes/source.h)");
  cmd->add_option("--kubeconfig", cli->kubeconfig,
                  "with --kubernetes: kubeconfig file (default: $KUBECONFIG, else in-cluster)")
      ->needs(kubernetes);
  cmd->add_option("--context", cli->context, "with --kubernetes: kubeconfig context")
      ->needs(kubernetes);
  cmd->add_option("--namespace", cli->ns,
                  "with --kubernetes: namespace to watch (default: the context's or the service "
                  "account's)")
      ->needs(kubernetes);
  cmd->add_option("--log-format", cli->log_format,
                  "text or json (one JSON object a line); overrides the config's log_format")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--log-level", cli->log_level,
                  "trace, debug, info, warn, error, critical or off; overrides the config's "
                  "log_level (SIGUSR1 / SIGUSR2 step it at run time)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  auto print_reference = std::make_shared<bool>(false);
  cmd->add_flag("--config-reference", *print_reference,
                "print every config key with its type, default and meaning (Markdown, "
                "docs/configuration.md) and exit");
  cmd->callback([cli, drain_timeout_s, drain, config, print_reference] {
    if (*print_reference) {
      std::cout << GatewayConfigReference();
      return SetExitCode(0);
    }
    if (config->count() == 0 && !cli->kubernetes) {
      throw CLI::RequiredError("--config (required without --kubernetes)");
    }
    cli->drain_timeout_s.reset();
    if (drain->count() > 0) cli->drain_timeout_s = *drain_timeout_s;
    SetExitCode(Run(*cli));
  });
}

}  // namespace kinference::gateway
