// `kinference engine-sim`: options, start-up and the single-threaded event loop.
#include "enginesim/cli.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <memory>

#include "engine/profile.h"
#include "enginesim/server.h"

namespace kinference::enginesim {

namespace {

struct CliOptions {
  EngineSimOptions server;
  std::string profile = "l40s-27b-fp8";
  std::string kv_events_config;  // vLLM's --kv-events-config JSON
  std::string kv_events_encoding = "map";
  std::string kv_events_hashes = "int";
  std::string fault = "none";
  std::string fault_metrics = "none";
};

// --kv-events-config and the two wire choices into server.kv_events; false on error.
bool ApplyKvEventsFlags(CliOptions& cli) {
  if (cli.kv_events_config.empty()) return true;
  auto c = ParseKvEventsConfig(cli.kv_events_config);
  auto enc = ParseEventEncoding(cli.kv_events_encoding);
  auto hashes = ParseHashEncoding(cli.kv_events_hashes);
  for (const Status& s : {c.status(), enc.status(), hashes.status()}) {
    if (!s.ok()) {
      spdlog::error("{}", s.message());
      return false;
    }
  }
  cli.server.kv_events = *c;
  cli.server.kv_events.encoding = *enc;
  cli.server.kv_events.hashes = *hashes;
  return true;
}

bool ApplyFaultFlags(CliOptions& cli) {
  auto request = ParseRequestFault(cli.fault);
  auto metrics = ParseMetricsFault(cli.fault_metrics);
  for (const Status& s : {request.status(), metrics.status()}) {
    if (!s.ok()) {
      spdlog::error("{}", s.message());
      return false;
    }
  }
  cli.server.faults.request = *request;
  cli.server.faults.metrics = *metrics;
  return true;
}

int Run(CliOptions cli) {
  // Logs go to stderr; stdout carries only the "listening on" line that scripts read.
  spdlog::set_default_logger(spdlog::stderr_color_mt("engine-sim"));
  auto profile = engine::ProfileByName(cli.profile);
  if (!profile.ok()) {
    spdlog::error("{}", profile.status().message());
    return 2;
  }
  if (!ApplyKvEventsFlags(cli) || !ApplyFaultFlags(cli)) return 2;
  if (!(cli.server.time_scale > 0)) {
    spdlog::error("--time-scale must be > 0");
    return 2;
  }
  boost::asio::io_context io(1);
  EngineSimServer server(io, cli.server, *profile);
  auto port = server.Start();
  if (!port.ok()) {
    spdlog::error("{}", port.status().message());
    return 1;
  }
  std::printf("engine-sim listening on %s:%u\n", cli.server.host.c_str(),
              static_cast<unsigned>(*port));
  std::fflush(stdout);
  spdlog::info("profile {} serving model {} (time scale {})", profile->name,
               server.served_model_name(), cli.server.time_scale);
  if (!server.kv_events_endpoint().empty()) {
    spdlog::info("KV events on {} (replay {})", server.kv_events_endpoint(),
                 server.kv_events_replay_endpoint());
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: shutting down", sig);
    server.Stop();
    io.stop();
  });
  io.run();
  return 0;
}

}  // namespace

void RegisterCommand(CLI::App& app) {
  auto cli = std::make_shared<CliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "engine-sim", "Simulated vLLM server: the engine model behind vLLM's OpenAI HTTP API");
  cmd->add_option("--host", cli->server.host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", cli->server.port, "Port to bind (0: any free port)")
      ->capture_default_str();
  cmd->add_option(
         "--profile", cli->profile,
         "Hardware profile (" +
             [] {
               std::string names;
               for (const auto& n : engine::ProfileNames())
                 names += (names.empty() ? "" : ", ") + n;
               return names;
             }() +
             ")")
      ->capture_default_str();
  cmd->add_option("--served-model-name", cli->server.served_model_name,
                  "Model name clients must use (default: the profile's model)");
  cmd->add_option("--time-scale", cli->server.time_scale,
                  "Run the engine this many times faster than real time")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", cli->server.max_body_bytes,
                  "Largest request body accepted (413 above)")
      ->capture_default_str();
  cmd->add_option("--engine-label", cli->server.engine_label,
                  "Value of the `engine` label on /metrics")
      ->capture_default_str();
  cmd->add_option("--tls-cert", cli->server.tls_cert_file,
                  "Serve HTTPS with this PEM certificate chain (with --tls-key)");
  cmd->add_option("--tls-key", cli->server.tls_key_file, "PEM private key for --tls-cert");
  cmd->add_option("--require-api-key", cli->server.required_api_key,
                  "Require this API key: `x-api-key` on /v1/messages, `Authorization: Bearer` "
                  "on the OpenAI routes (401 otherwise)");
  cmd->add_option("--kv-events-config", cli->kv_events_config,
                  "Publish KV-cache events as vLLM does: vLLM's KVEventsConfig JSON, e.g. "
                  "'{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", "
                  "\"endpoint\": \"tcp://*:5557\", \"replay_endpoint\": \"tcp://*:5558\", "
                  "\"topic\": \"kv\"}' (port 0: a free port, shown by /kv_event_sources)");
  cmd->add_option("--kv-events-encoding", cli->kv_events_encoding,
                  "KV events as maps with a \"type\" key (vLLM since mid-2026) or as "
                  "positional arrays (earlier releases): map | array")
      ->capture_default_str();
  cmd->add_option("--kv-events-hashes", cli->kv_events_hashes,
                  "Block hashes as 64-bit ints (vLLM's default) or 32-byte strings "
                  "(VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0): int | bytes")
      ->capture_default_str();
  cmd->add_option("--fault", cli->fault,
                  "Fail generation requests on purpose, for tests (enginesim/faults.h): none | "
                  "crash-mid-stream | 5xx | reset | slow-first-byte | stall | wrong-usage; a "
                  "request's x-engine-sim-fault header overrides it")
      ->capture_default_str();
  cmd->add_option("--fault-metrics", cli->fault_metrics, "Fail GET /metrics: none | fail | slow")
      ->capture_default_str();
  cmd->add_option("--fault-after-tokens", cli->server.faults.after_tokens,
                  "Tokens a request gets before crash-mid-stream or stall strikes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--fault-delay-s", cli->server.faults.delay_s,
                  "Wall seconds of slow-first-byte and of a slow /metrics")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->callback([cli] { SetExitCode(Run(*cli)); });
}

}  // namespace kinference::enginesim
