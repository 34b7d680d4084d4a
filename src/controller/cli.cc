#include "controller/cli.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdlib>
#include <iostream>
#include <random>

#include "controller/controller.h"
#include "controller/policy_history.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"

namespace kinference::controller {
namespace {

struct CliOptions {
  std::string kubeconfig;
  std::string context;
  std::string ns;
  std::string listen = "127.0.0.1:0";
  ControllerOptions controller;
};

// client-go's leader election identities are "<hostname>_<uuid>"; the suffix keeps two
// processes on one host (tests, a restarted pod whose old lease record remains) apart.
std::string DefaultIdentity() {
  std::string base;
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') {
    base = pod;
  } else {
    char host[256] = {0};
    base = ::gethostname(host, sizeof host - 1) == 0 ? host : "kinference";
  }
  std::random_device rd;
  return fmt::format("{}_{:08x}", base, rd());
}

int Run(CliOptions cli) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("controller"));
  auto config = k8s::ResolveClusterConfig(cli.kubeconfig, cli.context);
  if (!config.ok()) {
    spdlog::error("{}", config.status().message());
    return 2;
  }
  ControllerOptions& o = cli.controller;
  o.ns = cli.ns.empty() ? config->default_namespace : cli.ns;
  if (o.identity.empty()) o.identity = DefaultIdentity();
  size_t colon = cli.listen.rfind(':');
  if (colon == std::string::npos) {
    spdlog::error("--listen: expected ADDRESS:PORT, got '{}'", cli.listen);
    return 2;
  }
  o.listen_address = cli.listen.substr(0, colon);
  try {
    int port = std::stoi(cli.listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    o.listen_port = static_cast<uint16_t>(port);
  } catch (const std::exception&) {
    spdlog::error("--listen: bad port in '{}'", cli.listen);
    return 2;
  }
  if (!(o.lease_duration_s > o.renew_deadline_s && o.renew_deadline_s > o.retry_period_s &&
        o.retry_period_s > 0)) {
    spdlog::error(
        "leader election: need lease-duration-s > renew-deadline-s > retry-period-s > 0 "
        "(client-go's rule)");
    return 2;
  }
  spdlog::info("controller: {} ({}), namespace {}, identity {}", config->server, config->source,
               o.ns, o.identity);
  boost::asio::io_context io(1);
  auto client = std::make_shared<k8s::RestClient>(io.get_executor(), *config);
  Controller controller(io, client, o);
  auto port = controller.Start();
  if (!port.ok()) {
    spdlog::error("controller: {}", port.status().message());
    return 1;
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    spdlog::info("controller: shutting down");
    controller.Stop([&] { io.stop(); });
  });
  std::cout << "controller listening on " << o.listen_address << ":" << *port << std::endl;
  io.run();
  return 0;
}

}  // namespace

void RegisterCommand(CLI::App& app) {
  auto cli = std::make_shared<CliOptions>();
  auto* cmd = app.add_subcommand(
      "controller",
      "Kubernetes controller: validates kinference.io objects, writes their status, keeps "
      "InferencePolicy revisions (leader-elected)");
  cmd->add_option("--kubeconfig", cli->kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, else in-cluster)");
  cmd->add_option("--context", cli->context, "kubeconfig context (default: current-context)");
  cmd->add_option("--namespace", cli->ns,
                  "namespace to watch (default: the context's or the service account's)");
  cmd->add_option("--identity", cli->controller.identity,
                  "leader election identity (default: $POD_NAME or host name, plus a random "
                  "suffix)");
  cmd->add_option("--lease-name", cli->controller.lease_name, "coordination.k8s.io/v1 Lease name")
      ->capture_default_str();
  cmd->add_option("--lease-duration-s", cli->controller.lease_duration_s,
                  "seconds a leader's lease lasts without renewal")
      ->capture_default_str();
  cmd->add_option("--renew-deadline-s", cli->controller.renew_deadline_s,
                  "seconds the leader keeps leading without a successful renewal")
      ->capture_default_str();
  cmd->add_option("--retry-period-s", cli->controller.retry_period_s,
                  "seconds between election attempts")
      ->capture_default_str();
  cmd->add_option("--revision-history-limit", cli->controller.revision_history_limit,
                  "InferencePolicy revisions kept per policy")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--listen", cli->listen,
                  "address:port for /healthz, /readyz and /metrics (port 0: any free port)")
      ->capture_default_str();
  cmd->callback([cli] { SetExitCode(Run(*cli)); });
  RegisterPolicyHistoryCommands(app);
}

}  // namespace kinference::controller
