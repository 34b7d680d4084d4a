#include "enginesim/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <random>

#include "api/sse.h"
#include "engine/metrics.h"
#include "enginesim/anthropic_api.h"
#include "enginesim/tokenize_api.h"

namespace kinference::enginesim {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {
// How far (wall seconds) a step may start after the previous one ended and still be laid
// end to end with it in model time; beyond this the engine is considered to have idled.
constexpr double kBackToBackSlackWall = 0.002;
constexpr const char* kPaths[] = {
    "/v1/completions",  "/v1/chat/completions", "/v1/models", "/health",
    "/metrics",         "/v1/messages",         "/version",   "/tokenize",
    "/kv_event_sources"};
// The vLLM release whose HTTP surface engine-sim follows (tests/realvllm conformance).
constexpr const char* kVllmVersion = "0.32.0";
}  // namespace

EngineSimServer::EngineSimServer(asio::io_context& io, EngineSimOptions options,
                                 engine::HardwareProfile profile)
    : io_(io),
      options_(std::move(options)),
      engine_(profile),
      clock_(options_.time_scale),
      server_(io, http::ServerOptions{.address = options_.host,
                                      .port = options_.port,
                                      .max_body_bytes = options_.max_body_bytes,
                                      .tls_cert_file = options_.tls_cert_file,
                                      .tls_key_file = options_.tls_key_file}),
      timer_(io) {
  if (options_.served_model_name.empty()) options_.served_model_name = profile.model_name;
  id_salt_ = std::random_device{}();
  started_unix_s_ =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  server_.Route("POST", "/v1/completions",
                [this](http::Request r, std::shared_ptr<http::ResponseWriter> w) {
                  HandleGenerate(false, std::move(r), std::move(w));
                });
  server_.Route("POST", "/v1/chat/completions",
                [this](http::Request r, std::shared_ptr<http::ResponseWriter> w) {
                  HandleGenerate(true, std::move(r), std::move(w));
                });
  server_.Route("POST", "/v1/messages",
                [this](http::Request r, std::shared_ptr<http::ResponseWriter> w) {
                  HandleMessages(std::move(r), std::move(w));
                });
  server_.Route("GET", "/v1/models",
                [this](http::Request, std::shared_ptr<http::ResponseWriter> w) {
                  HandleModels(std::move(w));
                });
  server_.Route("GET", "/health", [](http::Request, std::shared_ptr<http::ResponseWriter> w) {
    w->Send(200, "", "");
  });
  server_.Route("GET", "/metrics", [this](http::Request, std::shared_ptr<http::ResponseWriter> w) {
    HandleMetrics(std::move(w));
  });
  server_.Route("GET", "/version", [](http::Request, std::shared_ptr<http::ResponseWriter> w) {
    w->Send(200, "application/json", json::serialize(json::object{{"version", kVllmVersion}}));
  });
  server_.Route("POST", "/tokenize",
                [this](http::Request r, std::shared_ptr<http::ResponseWriter> w) {
                  HandleTokenize(std::move(r), std::move(w));
                });
  // vLLM: the KV-event publisher per data-parallel rank ({} when not publishing).
  server_.Route("GET", "/kv_event_sources",
                [this](http::Request, std::shared_ptr<http::ResponseWriter> w) {
                  w->Send(200, "application/json",
                          KvEventSourcesBody(options_.kv_events, kv_events_endpoint(),
                                             kv_events_replay_endpoint()));
                });
  // FastAPI's answers (vLLM's HTTP framework) for unknown paths and wrong methods.
  server_.SetFallback([](http::Request r, std::shared_ptr<http::ResponseWriter> w) {
    bool known = std::find(std::begin(kPaths), std::end(kPaths), r.path) != std::end(kPaths);
    if (known) {
      w->Send(405, "application/json", R"({"detail":"Method Not Allowed"})");
    } else {
      w->Send(404, "application/json", R"({"detail":"Not Found"})");
    }
  });
}

EngineSimServer::~EngineSimServer() { Stop(); }

Result<uint16_t> EngineSimServer::Start() {
  if (options_.kv_events.enabled && !kv_publisher_) {
    const KvEventsConfig& c = options_.kv_events;
    kv::PublisherOptions p;
    p.endpoint = c.endpoint;
    p.replay_endpoint = c.replay_endpoint.value_or("");
    p.topic = c.topic;
    p.buffer_steps = c.buffer_steps;
    p.max_queue = c.max_queue_size;
    p.encoding = c.encoding;
    p.hashes = c.hashes;
    auto publisher = kv::ZmqPublisher::Start(std::move(p));
    if (!publisher.ok()) return publisher.status();
    kv_publisher_ = std::move(*publisher);
    // Sequence 0 of this process: whatever a subscriber knew about this engine is gone.
    PublishKvEvents({kv::AllBlocksCleared{}});
  }
  return server_.Start();
}

std::string EngineSimServer::kv_events_endpoint() const {
  return kv_publisher_ ? kv_publisher_->endpoint() : std::string();
}

std::string EngineSimServer::kv_events_replay_endpoint() const {
  return kv_publisher_ ? kv_publisher_->replay_endpoint() : std::string();
}

void EngineSimServer::PublishKvEvents(std::vector<kv::KvEvent> events) {
  if (!kv_publisher_ || events.empty()) return;
  kv::EventBatch batch;
  batch.ts =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  batch.events = std::move(events);
  batch.data_parallel_rank = 0;
  kv_publisher_->Publish(batch);
}

void EngineSimServer::Stop() {
  server_.Stop();
  ++timer_generation_;
  timer_.cancel();
}

std::string EngineSimServer::NewId(bool chat) {
  // vLLM ids are "cmpl-" / "chatcmpl-" + 32 hex digits (random_uuid()).
  uint64_t n = ++next_id_;
  uint64_t mixed = (n + id_salt_) * 0x9E3779B97F4A7C15ull;
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(mixed),
                static_cast<unsigned long long>(n));
  return std::string(chat ? "chatcmpl-" : "cmpl-") + buf;
}

void EngineSimServer::SendError(http::ResponseWriter& writer, const Status& status,
                                bool anthropic) {
  if (anthropic) {
    writer.Send(AnthropicErrorStatus(status), "application/json", AnthropicErrorBody(status));
  } else {
    writer.Send(HttpStatusFor(status.code()), "application/json", VllmErrorBody(status));
  }
}

bool EngineSimServer::Authorized(const http::Request& request, http::ResponseWriter& writer) {
  if (options_.required_api_key.empty() ||
      request.headers.Find("authorization") == "Bearer " + options_.required_api_key)
    return true;
  // vLLM's answer with --api-key (vllm/entrypoints/openai/api_server.py).
  writer.Send(401, "application/json", R"({"error":"Unauthorized"})");
  return false;
}

void EngineSimServer::HandleGenerate(bool chat, http::Request request,
                                     std::shared_ptr<http::ResponseWriter> writer) {
  if (!Authorized(request, *writer)) return;
  RequestFault fault = options_.faults.request;
  if (std::string_view named = request.headers.Find(kFaultHeader); !named.empty()) {
    auto f = ParseRequestFault(named);
    if (!f.ok()) return SendError(*writer, f.status());
    fault = *f;
  }
  switch (fault) {
    case RequestFault::kServerError:
      return writer->Send(500, "application/json", FaultServerErrorBody());
    case RequestFault::kReset:
      return writer->Abort();
    case RequestFault::kSlowFirstByte:
      return After(options_.faults.delay_s,
                   [this, chat, body = std::move(request.body), writer,
                    id = std::string(request.headers.Find("x-request-id"))]() mutable {
                     Generate(chat, body, std::move(writer), RequestFault::kNone, id);
                   });
    default:
      return Generate(chat, request.body, std::move(writer), fault,
                      std::string(request.headers.Find("x-request-id")));
  }
}

void EngineSimServer::Generate(bool chat, const std::string& body,
                               std::shared_ptr<http::ResponseWriter> writer, RequestFault fault,
                               const std::string& x_request_id) {
  auto parsed = chat ? ParseChatRequest(body) : ParseCompletionRequest(body);
  if (!parsed.ok()) return SendError(*writer, parsed.status());
  Submit(std::move(*parsed), std::move(writer), std::nullopt, fault, x_request_id);
}

void EngineSimServer::After(double delay_s, std::function<void()> then) {
  auto timer = std::make_shared<asio::steady_timer>(
      io_, std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(delay_s)));
  timer->async_wait([timer, then = std::move(then)](boost::system::error_code ec) {
    if (!ec) then();
  });
}

void EngineSimServer::MaybeStrike(Live& l) {
  ++l.tokens;
  if (l.stalled || l.tokens < options_.faults.after_tokens) return;
  if (l.fault == RequestFault::kStall) {
    spdlog::warn("fault stall: {} stops after {} tokens", l.meta.id, l.tokens);
    l.stalled = true;
  } else if (l.fault == RequestFault::kCrashMidStream) {
    spdlog::error("fault crash-mid-stream: exiting after {} tokens of {}", l.tokens, l.meta.id);
    l.stalled = true;
    // Long enough for the tokens already written to leave, as a killed vLLM's would have.
    After(0.2, [] { std::_Exit(70); });
  }
}

void EngineSimServer::HandleMessages(http::Request request,
                                     std::shared_ptr<http::ResponseWriter> writer) {
  if (Status s = CheckAnthropicHeaders(request.headers, options_.required_api_key); !s.ok())
    return SendError(*writer, s, true);
  auto call = ParseMessagesCall(request.body);
  if (!call.ok()) return SendError(*writer, call.status(), true);
  auto parsed = ParseChatRequest(call->chat_body);
  if (!parsed.ok()) return SendError(*writer, parsed.status(), true);
  Submit(std::move(*parsed), std::move(writer), std::move(call->response), RequestFault::kNone,
         std::string(request.headers.Find("x-request-id")));
}

void EngineSimServer::Submit(GenerationRequest g, std::shared_ptr<http::ResponseWriter> writer,
                             std::optional<api::anthropic::ResponseContext> anthropic,
                             RequestFault fault, const std::string& x_request_id) {
  const bool chat = g.chat;
  const engine::HardwareProfile& profile = engine_.profile();
  if (Status s = ResolveRequest(g, options_.served_model_name, profile.max_model_len); !s.ok()) {
    return SendError(*writer, s, anthropic.has_value());
  }
  engine::EngineRequest er;
  er.id = NewId(chat);
  const int prompt_tokens = static_cast<int>(g.prompt.size());
  er.prompt = std::move(g.prompt);
  er.max_tokens = *g.max_tokens;
  er.ignore_eos = g.ignore_eos;
  // Without a seed vLLM samples at random; here every unseeded request gets its own seed.
  er.seed = g.seed ? *g.seed : (id_salt_ ^ (next_id_ * 0xD1B54A32D192ED03ull));
  er.arrival = clock_.Now();
  const std::string id = er.id;
  if (Status s = engine_.AddRequest(std::move(er)); !s.ok())
    return SendError(*writer, s, anthropic.has_value());

  Live live;
  live.meta.id = x_request_id.empty() ? id : (chat ? "chatcmpl-" : "cmpl-") + x_request_id;
  live.meta.created = static_cast<int64_t>(std::time(nullptr));
  live.meta.model = options_.served_model_name;
  live.meta.chat = chat;
  live.stream = g.stream;
  live.include_usage = g.include_usage;
  live.continuous_usage = g.include_usage && g.continuous_usage;
  live.prompt_tokens = prompt_tokens;
  live.fault = fault;
  if (anthropic && g.stream) live.translator.emplace(*anthropic);
  live.anthropic = std::move(anthropic);
  if (g.stream) {
    http::Headers h;
    h.Add("Cache-Control", "no-cache");
    writer->StartStream(200, "text/event-stream; charset=utf-8", h);
  }
  writer->OnClose([this, id] { OnClientGone(id); });
  live.writer = std::move(writer);
  live_.emplace(id, std::move(live));
  Drive(false);
}

std::string EngineSimServer::Emit(Live& l, const std::string& data) {
  return l.translator ? l.translator->OnData(data) : api::FormatSse(data);
}

void EngineSimServer::OnClientGone(const std::string& id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  live_.erase(it);
  spdlog::debug("client of {} disconnected; aborting", id);
  engine_.Abort(id);
  Drive(false);
}

void EngineSimServer::HandleTokenize(http::Request request,
                                     std::shared_ptr<http::ResponseWriter> writer) {
  if (!Authorized(request, *writer)) return;
  auto parsed = ParseTokenizeRequest(request.body);
  if (!parsed.ok()) return SendError(*writer, parsed.status());
  if (!parsed->model.empty() && parsed->model != options_.served_model_name) {
    return SendError(
        *writer, Status(ErrorCode::kNotFound, "The model `" + parsed->model + "` does not exist.")
                     .WithParam("model"));
  }
  writer->Send(200, "application/json",
               FormatTokenizeResponse(*parsed, engine_.profile().max_model_len));
}

void EngineSimServer::HandleModels(std::shared_ptr<http::ResponseWriter> writer) {
  const auto& name = options_.served_model_name;
  const auto created = static_cast<int64_t>(std::time(nullptr));
  // vLLM's ModelPermission (vllm/entrypoints/openai/protocol.py), id "modelperm-<hex>".
  json::object permission{{"id", "modelperm-" + NewId(false).substr(5, 16)},
                          {"object", "model_permission"},
                          {"created", created},
                          {"allow_create_engine", false},
                          {"allow_sampling", true},
                          {"allow_logprobs", true},
                          {"allow_search_indices", false},
                          {"allow_view", true},
                          {"allow_fine_tuning", false},
                          {"organization", "*"},
                          {"group", nullptr},
                          {"is_blocking", false}};
  json::object model{{"id", name},
                     {"object", "model"},
                     {"created", created},
                     {"owned_by", "vllm"},
                     {"root", name},
                     {"parent", nullptr},
                     {"max_model_len", engine_.profile().max_model_len},
                     {"permission", json::array{std::move(permission)}}};
  json::object list{{"object", "list"}, {"data", json::array{std::move(model)}}};
  writer->Send(200, "application/json", json::serialize(list));
}

void EngineSimServer::HandleMetrics(std::shared_ptr<http::ResponseWriter> writer) {
  switch (options_.faults.metrics) {
    case MetricsFault::kFail:
      return writer->Send(500, "", "");
    case MetricsFault::kSlow:
      return After(options_.faults.delay_s, [this, writer] { SendMetrics(*writer); });
    default:
      return SendMetrics(*writer);
  }
}

void EngineSimServer::SendMetrics(http::ResponseWriter& writer) {
  // Prometheus text exposition format (prometheus.io/docs/instrumenting/exposition_formats),
  // under the content type vLLM 0.32's prometheus_client sends.
  engine::EngineMetrics m = engine_.metrics();
  m.created_unix_s = started_unix_s_;
  writer.Send(200, "text/plain; version=1.0.0; charset=utf-8",
              engine::RenderPrometheus(m, engine_.profile(), options_.served_model_name,
                                       options_.engine_label));
}

void EngineSimServer::Drive(bool continuing) {
  if (stepping_) return;
  const Seconds now = clock_.Now();
  Seconds start = std::max(now, last_step_end_);
  if (continuing) {
    start = std::max(last_step_end_, now - kBackToBackSlackWall * options_.time_scale);
  }
  if (auto d = engine_.PlanStep(start)) {
    stepping_ = true;
    last_step_end_ = start + *d;
    ArmTimer(last_step_end_, /*step=*/true);
    return;
  }
  if (engine_.HasWork()) {
    // Requests still in their front-end delay: come back when the first is ready.
    if (auto t = engine_.NextReadyTime()) ArmTimer(std::max(*t, now), /*step=*/false);
  }
}

void EngineSimServer::ArmTimer(Seconds model_deadline, bool step) {
  const uint64_t generation = ++timer_generation_;
  const double wall = std::max(0.0, (model_deadline - clock_.Now()) / options_.time_scale);
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(wall)));
  timer_.async_wait([this, generation, step](boost::system::error_code ec) {
    if (ec || generation != timer_generation_) return;
    if (!step) return Drive(false);
    stepping_ = false;
    engine::StepOutput out = engine_.CompleteStep();
    PublishKvEvents(std::move(out.kv_events));
    Deliver(out);
    Drive(true);
  });
}

void EngineSimServer::Deliver(const engine::StepOutput& out) {
  std::unordered_map<std::string_view, const engine::FinishedRequest*> finished;
  for (const auto& f : out.finished) finished[f.request_id] = &f;

  for (const auto& t : out.tokens) {
    auto it = live_.find(t.request_id);
    if (it == live_.end()) continue;
    Live& l = it->second;
    if (l.stalled) continue;
    if (l.fault != RequestFault::kNone) MaybeStrike(l);
    if (!l.stream) {
      l.text += t.text;
      continue;
    }
    std::optional<std::string_view> reason;
    auto f = finished.find(t.request_id);
    if (f != finished.end() && f->second->reason != engine::FinishReason::kAbort &&
        t.index + 1 >= f->second->completion_tokens) {
      reason = engine::FinishReasonName(f->second->reason);
      l.finish_sent = true;
    }
    std::string chunk;
    auto usage = [&](std::string c, int completion) {
      return l.continuous_usage ? WithContinuousUsage(c, l.prompt_tokens, completion) : c;
    };
    if (l.meta.chat && !l.role_sent) {
      chunk = Emit(l, usage(FormatRoleChunk(l.meta), 0));
      l.role_sent = true;
    }
    chunk += Emit(l, usage(FormatTokenChunk(l.meta, t.text, reason, reason && !l.include_usage),
                           t.index + 1));
    l.writer->Write(std::move(chunk));
  }

  for (const auto& f : out.finished) {
    auto it = live_.find(f.request_id);
    if (it == live_.end()) continue;
    Live& l = it->second;
    if (l.stalled) continue;  // the connection stays open until the client leaves
    if (f.reason == engine::FinishReason::kAbort) {
      // Aborted by the engine itself, not by the client (which would have left live_).
      Status aborted(ErrorCode::kInternal, "The request was aborted.");
      if (l.stream) {
        if (l.translator) l.writer->Write(l.translator->OnError(aborted));
        l.writer->End();
      } else {
        SendError(*l.writer, aborted, l.anthropic.has_value());
      }
      live_.erase(it);
      continue;
    }
    // Created: the prompt's full blocks that were not found cached (vLLM's
    // num_cache_creation_tokens; prefix caching keeps full blocks only).
    const int block = engine_.profile().block_size;
    const int full = block > 0 ? f.prompt_tokens / block * block : 0;
    const Usage usage{f.prompt_tokens, f.completion_tokens, f.cached_tokens,
                      std::max(0, full - f.cached_tokens)};
    const char* reason = engine::FinishReasonName(f.reason);
    if (l.stream) {
      std::string tail;
      if (l.meta.chat && !l.role_sent) tail += Emit(l, FormatRoleChunk(l.meta));
      if (!l.finish_sent) tail += Emit(l, FormatTokenChunk(l.meta, "", reason, !l.include_usage));
      if (l.include_usage) {
        std::string chunk = FormatUsageChunk(l.meta, usage);
        tail += Emit(l, l.fault == RequestFault::kWrongUsage ? WithWrongUsage(chunk) : chunk);
      }
      tail += Emit(l, "[DONE]");
      l.writer->Write(std::move(tail));
      l.writer->End();
    } else if (l.anthropic) {
      auto r = api::anthropic::TranslateResponse(200, FormatResponse(l.meta, l.text, reason, usage),
                                                 *l.anthropic);
      l.writer->Send(r.status, "application/json", std::move(r.body));
    } else {
      std::string body = FormatResponse(l.meta, l.text, reason, usage);
      if (l.fault == RequestFault::kWrongUsage) body = WithWrongUsage(body);
      l.writer->Send(200, "application/json", std::move(body));
    }
    live_.erase(it);
  }
}

}  // namespace kinference::enginesim
