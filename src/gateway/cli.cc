#include "gateway/cli.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <iostream>

#include "gateway/config.h"
#include "gateway/gateway.h"

namespace kinference::gateway {
namespace {

int Run(const std::string& config_path) {
  // Logs go to stderr; stdout carries only the "listening" line that tools wait for.
  spdlog::set_default_logger(spdlog::stderr_color_mt("gateway"));
  GatewayConfig config;
  try {
    config = LoadGatewayConfig(config_path);
  } catch (const ConfigError& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
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
    spdlog::error("gateway: cannot listen on {}:{}: {}", config.listen_address, config.listen_port,
                  port.status().message());
    return 1;
  }
  std::cout << "gateway listening on " << config.listen_address << ":" << *port << std::endl;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    spdlog::info("gateway: shutting down");
    gateway->Stop();
    io.stop();
  });
  io.run();
  return 0;
}

}  // namespace

void RegisterCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("gateway", "OpenAI-compatible gateway routing to vLLM pools");
  auto path = std::make_shared<std::string>();
  cmd->add_option("--config", *path, "gateway YAML config (see examples/gateway.yaml)")->required();
  cmd->callback([path] { SetExitCode(Run(*path)); });
}

}  // namespace kinference::gateway
