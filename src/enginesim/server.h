// EngineSimServer: the engine model (engine/engine.h) behind vLLM's HTTP surface, so
// that OpenAI clients and vLLM-aware routers can use it as if it were vLLM.
//
// Routes: POST /v1/completions, POST /v1/chat/completions (whole or SSE-streamed),
// GET /v1/models, GET /health, GET /metrics (vLLM metric names, Prometheus text),
// GET /version (the vLLM release whose surface it follows), POST /tokenize
// (tokenize_api.h), GET /kv_event_sources (vLLM's; enginesim/kv_events_config.h), and
// POST /v1/messages (Anthropic-compatible, whole or streamed; anthropic_api.h): the
// equivalent chat completion runs on the engine and its answer is translated back, so
// an engine-sim can play an Anthropic provider in tests. With required_api_key set,
// /v1/messages needs `x-api-key: <key>` (or a bearer token) and the OpenAI routes
// `Authorization: Bearer <key>` (vLLM's --api-key: 401 {"error":"Unauthorized"}).
// A client that disconnects before its response ends has its request aborted.
// A request's `id` is "chatcmpl-" / "cmpl-" + its X-Request-Id header when it has one, as
// vLLM names it (vllm/entrypoints/openai/serving_engine.py _base_request_id), else + 32
// random hex digits; the engine keys requests by their own unique id either way.
//
// Time: model time is a RealClock scaled by time_scale K (K model seconds per wall
// second); a step of model duration d takes d / K wall seconds. Consecutive steps are
// laid end to end in model time (as vLLM runs them back to back) with each timer set to
// an absolute deadline, so timer lateness does not accumulate.
//
// KV events: with options.kv_events enabled, each step's KV-cache events (engine/engine.h
// StepOutput::kv_events, vLLM's shapes and hashes) are published as one batch on a
// ZeroMQ PUB socket as vLLM does (kv/zmq/publisher.h), with a replay ROUTER socket when
// configured. The first batch (sequence 0) of every process is AllBlocksCleared: a
// restarted engine-sim tells subscribers its cache is empty.
//
// Faults: options.faults (enginesim/faults.h) make it fail on purpose, for tests of what a
// gateway does about vLLM failures.
//
// Thread-safety: everything runs on one io_context that must be run by ONE thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "api/anthropic/messages_response.h"
#include "common/clock.h"
#include "engine/engine.h"
#include "enginesim/faults.h"
#include "enginesim/kv_events_config.h"
#include "enginesim/openai_api.h"
#include "http/server.h"
#include "kv/zmq/publisher.h"

namespace kinference::enginesim {

struct EngineSimOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;           // 0: any free port
  std::string served_model_name;  // empty: the profile's model_name
  double time_scale = 1.0;        // K > 0
  size_t max_body_bytes = 32 * 1024 * 1024;
  std::string engine_label = "0";  // `engine` label of the metrics
  // Serve HTTPS with these PEM files (both set), e.g. to play an external provider in
  // tests (`--tls-cert/--tls-key`).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string required_api_key;  // empty: no key needed (`--require-api-key`)
  KvEventsConfig kv_events;      // `--kv-events-config` and friends; off by default
  FaultOptions faults;           // `--fault` and friends; none by default
};

class EngineSimServer {
 public:
  EngineSimServer(boost::asio::io_context& io, EngineSimOptions options,
                  engine::HardwareProfile profile);
  ~EngineSimServer();
  // Binds and starts serving (and the KV-event publisher); returns the bound port.
  // Errors: kUnavailable (HTTP), kInvalidArgument (a KV-event endpoint cannot be bound).
  Result<uint16_t> Start();
  void Stop();
  const std::string& served_model_name() const { return options_.served_model_name; }
  // The bound KV-event endpoints ("" when not publishing / no replay socket).
  std::string kv_events_endpoint() const;
  std::string kv_events_replay_endpoint() const;

 private:
  struct Live {
    std::shared_ptr<http::ResponseWriter> writer;
    ResponseMeta meta;
    bool stream = false;
    bool include_usage = false;
    bool continuous_usage = false;  // vLLM's continuous_usage_stats (with include_usage)
    int prompt_tokens = 0;
    bool role_sent = false;
    bool finish_sent = false;
    std::string text;  // non-streaming: the output so far
    // /v1/messages: the answer is translated to Anthropic's shapes.
    std::optional<api::anthropic::ResponseContext> anthropic;
    std::optional<api::anthropic::StreamTranslator> translator;  // streamed ones
    RequestFault fault = RequestFault::kNone;
    int tokens = 0;        // tokens generated so far
    bool stalled = false;  // stall / crash fault struck: nothing more is written
  };

  void HandleGenerate(bool chat, http::Request request,
                      std::shared_ptr<http::ResponseWriter> writer);
  void Generate(bool chat, const std::string& body, std::shared_ptr<http::ResponseWriter> writer,
                RequestFault fault, const std::string& x_request_id);
  void HandleMessages(http::Request request, std::shared_ptr<http::ResponseWriter> writer);
  // Admits a parsed request and registers its response. `anthropic`: answer a Messages call.
  // `fault`: the fault to strike it with (kNone: none). `x_request_id`: the request's
  // X-Request-Id header (may be empty), for its response id.
  void Submit(GenerationRequest g, std::shared_ptr<http::ResponseWriter> writer,
              std::optional<api::anthropic::ResponseContext> anthropic, RequestFault fault,
              const std::string& x_request_id);
  // A stall or crash fault strikes `l` once it generated enough tokens.
  void MaybeStrike(Live& l);
  // Calls `then` after `delay_s` wall seconds.
  void After(double delay_s, std::function<void()> then);
  // One chunk's JSON (or "[DONE]") as the bytes to stream to `l`'s client.
  static std::string Emit(Live& l, const std::string& data);
  bool Authorized(const http::Request& request, http::ResponseWriter& writer);
  void HandleModels(std::shared_ptr<http::ResponseWriter> writer);
  void HandleTokenize(http::Request request, std::shared_ptr<http::ResponseWriter> writer);
  void HandleMetrics(std::shared_ptr<http::ResponseWriter> writer);
  void SendMetrics(http::ResponseWriter& writer);
  void PublishKvEvents(std::vector<kv::KvEvent> events);
  void SendError(http::ResponseWriter& writer, const Status& status, bool anthropic = false);
  void OnClientGone(const std::string& id);
  // Plans the next step if none is running. `continuing`: called right after a step.
  void Drive(bool continuing);
  void ArmTimer(Seconds model_deadline, bool step);
  void Deliver(const engine::StepOutput& out);
  std::string NewId(bool chat);

  boost::asio::io_context& io_;
  EngineSimOptions options_;
  engine::Engine engine_;
  RealClock clock_;
  http::Server server_;
  boost::asio::steady_timer timer_;
  uint64_t timer_generation_ = 0;
  bool stepping_ = false;
  Seconds last_step_end_ = 0;
  uint64_t next_id_ = 0;
  uint64_t id_salt_ = 0;
  std::unordered_map<std::string, Live> live_;
  double started_unix_s_ = 0;  // the metrics' _created time
  std::unique_ptr<kv::ZmqPublisher> kv_publisher_;
};

}  // namespace kinference::enginesim
