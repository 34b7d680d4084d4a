#include "gateway/proxy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <optional>

#include "http/client.h"
#include "http/sse.h"

namespace kinference::gateway {
namespace {

// Connect timeout (real seconds) for upstream calls: loopback and in-cluster connects
// take well under a second; a longer wait means the endpoint is down.
constexpr double kConnectTimeoutS = 3.0;

class Exchange : public InFlightRequest, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<GatewayContext> ctx, std::shared_ptr<http::ResponseWriter> writer,
           ParsedRequest request, routing::RequestFeatures features, std::string strategy,
           std::string path, Seconds arrival, std::shared_ptr<ResponseCodec> codec)
      : ctx_(std::move(ctx)),
        writer_(std::move(writer)),
        req_(std::move(request)),
        features_(std::move(features)),
        base_request_id_(features_.request_id),
        strategy_(std::move(strategy)),
        path_(std::move(path)),
        upstream_body_(UpstreamBody(req_)),
        arrival_(arrival),
        codec_(std::move(codec)) {}

  void Start() {
    std::weak_ptr<Exchange> weak = weak_from_this();
    std::erase_if(ctx_->in_flight, [](const auto& w) { return w.expired(); });
    ctx_->in_flight.push_back(weak);
    writer_->OnClose([weak] {
      if (auto self = weak.lock()) self->OnClientClosed();
    });
    Attempt();
  }

 private:
  void Attempt() {
    ctx_->RefreshBreakers();
    std::vector<routing::EndpointId> candidates = ctx_->EndpointsFor(req_.model);
    std::erase_if(candidates, [&](const auto& id) {
      return std::find(tried_.begin(), tried_.end(), id) != tried_.end();
    });
    // A provider retrying with no other endpoint for the model retries on itself.
    if (candidates.empty() && !tried_.empty()) {
      const Endpoint* last = ctx_->Find(tried_.back());
      if (last && last->provider) candidates.push_back(last->info.id);
    }
    Seconds now = ctx_->clock.Now();
    if (candidates.empty()) {
      return FailBeforeResponse(Status(ErrorCode::kUnavailable, last_error_), "none");
    }
    auto decision = ctx_->router.Pick(features_, candidates, strategy_, now);
    if (!decision.ok()) {
      Status s = decision.status();
      if (!tried_.empty()) s = Status(ErrorCode::kUnavailable, last_error_);
      return FailBeforeResponse(s, "none");
    }
    decision_ = std::move(*decision);
    const Endpoint* ep = ctx_->Find(decision_.endpoint);
    if (!ep) {
      return FailBeforeResponse(Status(ErrorCode::kInternal, "router picked an unknown endpoint"),
                                "none");
    }
    features_.request_id = tried_.empty()
                               ? base_request_id_
                               : base_request_id_ + "-retry" + std::to_string(tried_.size());
    ctx_->router.OnDispatched(features_, decision_, now);
    dispatched_ = true;

    http::ClientRequest call;
    call.method = "POST";
    call.host = ep->address.host;
    call.port = ep->address.port;
    call.target = path_;
    call.body = upstream_body_;
    call.headers.Add("x-request-id", features_.request_id);
    double timeout_model_s = ctx_->config.request_timeout_s;
    if (const ProviderConfig* p = ep->provider) {
      call.target = ProviderTarget(*p, path_);
      ParsedRequest rewritten = req_;
      rewritten.body["model"] = p->model;
      call.body = UpstreamBody(rewritten);
      call.headers.Add("authorization", "Bearer " + ep->api_key);
      call.tls = p->tls;
      call.ca_file = p->ca_file;
      if (p->timeout_s > 0) timeout_model_s = p->timeout_s;
    }
    const double timeout_s = ctx_->config.RealSeconds(timeout_model_s);
    call.connect_timeout_s = std::min(kConnectTimeoutS, timeout_s);
    call.header_timeout_s = timeout_s;
    call.idle_timeout_s = timeout_s;

    auto self = shared_from_this();
    http::ClientCallbacks cb;
    cb.on_headers = [self](int status, const http::Headers& h) { self->OnHeaders(status, h); };
    cb.on_data = [self](std::string_view d) { self->OnData(d); };
    cb.on_complete = [self](Status s) { self->OnComplete(std::move(s)); };
    call_ = http::StartCall(ctx_->executor, std::move(call), std::move(cb));
  }

  void OnHeaders(int status, const http::Headers& headers) {
    if (finished_) return;
    upstream_status_ = status;
    upstream_content_type_ = std::string(headers.Find("content-type"));
    if (status >= 500 && CanRetry()) {
      retry_pending_ = true;  // discard the error body, retry when it completes
      return;
    }
    // The client's 200 + SSE head waits for the first body byte: vLLM sends its headers
    // at once, so a replica dying before the first token is still retried (OnComplete).
    stream_pending_ = req_.stream && status == 200;
  }

  // Sends the held 200 + SSE head: the upstream's first body byte (or its end) arrived.
  void StartClientStream() {
    stream_pending_ = false;
    response_started_ = true;
    writer_->StartStream(200, "text/event-stream", RoutedHeaders());
  }

  void OnData(std::string_view data) {
    if (finished_ || retry_pending_) return;
    if (stream_pending_ && !data.empty()) StartClientStream();
    if (!response_started_) {
      body_.append(data);
      return;
    }
    parser_.Feed(data, [this](const http::SseEvent& ev) { OnEvent(ev); });
  }

  void OnEvent(const http::SseEvent& ev) {
    if (finished_) return;
    ChunkInfo info = InspectChunk(ev.data);
    if (info.usage) usage_ = info.usage;
    if (info.has_content) {
      Seconds now = ctx_->clock.Now();
      if (!first_token_) {
        first_token_ = now;
        double ttft = now - arrival_;
        ctx_->router.OnFirstToken(features_.request_id, now);
        ctx_->stats.RecordTtft(req_.model, ttft);
        ctx_->stats.RecordTtftPrediction(decision_.strategy, decision_.predicted_ttft_s, ttft);
      } else {
        ctx_->stats.RecordItl(req_.model, now - last_token_);
      }
      last_token_ = now;
    }
    if (codec_) {
      if (std::string out = codec_->OnEvent(ev); !out.empty()) writer_->Write(std::move(out));
      return;
    }
    if (info.usage_only && !req_.client_wants_usage) return;
    writer_->Write(http::FormatSse(ev.data, ev.event));
  }

  void OnComplete(Status status) {
    call_.reset();
    if (finished_) return;
    bool connect_failure =
        !status.ok() && upstream_status_ == 0 && status.code() == ErrorCode::kUnavailable;
    // 200 + SSE head, then the connection failed before any body byte.
    bool dropped_before_body = !status.ok() && stream_pending_ &&
                               status.code() != ErrorCode::kCancelled &&
                               status.code() != ErrorCode::kDeadlineExceeded;
    if ((retry_pending_ || connect_failure || dropped_before_body) && CanRetry()) {
      last_error_ =
          retry_pending_
              ? fmt::format("upstream {} answered {}", decision_.endpoint, upstream_status_)
              : fmt::format("upstream {}: {}", decision_.endpoint, status.message());
      stream_pending_ = false;
      spdlog::warn("request {}: {}; retrying on another endpoint", base_request_id_, last_error_);
      ctx_->router.OnFinished(features_.request_id, {}, routing::Outcome::kError,
                              ctx_->clock.Now());
      ctx_->stats.RecordRequest(decision_.endpoint, decision_.strategy, "retried");
      ctx_->OnUpstreamResult(decision_.endpoint, false);
      ++retries_;
      tried_.push_back(decision_.endpoint);
      dispatched_ = false;
      retry_pending_ = false;
      upstream_status_ = 0;
      body_.clear();
      parser_ = http::SseParser();
      return Attempt();
    }
    if (status.code() != ErrorCode::kCancelled) {
      ctx_->OnUpstreamResult(decision_.endpoint, status.ok() && upstream_status_ < 500);
    }
    // A streamed 200 that ended without a body byte still answers as a stream.
    if (stream_pending_ && status.ok()) StartClientStream();
    stream_pending_ = false;
    if (!status.ok()) {
      std::string message = fmt::format("upstream {}: {}", decision_.endpoint, status.message());
      ErrorCode code = status.code() == ErrorCode::kDeadlineExceeded ? ErrorCode::kDeadlineExceeded
                                                                     : ErrorCode::kUnavailable;
      Status err(code, message);
      if (response_started_) {
        writer_->Write(codec_ ? codec_->OnStreamError(err)
                              : http::FormatSse(http::OpenAiErrorBody(err)));
        writer_->End();
      } else if (codec_) {
        codec_->SendError(*writer_, err, RoutedHeaders());
      } else {
        writer_->Send(HttpStatusFor(code), "application/json", http::OpenAiErrorBody(err),
                      RoutedHeaders());
      }
      return Finish(routing::Outcome::kError, "error");
    }
    if (response_started_) {
      if (codec_) {
        if (std::string out = codec_->OnEnd(); !out.empty()) writer_->Write(std::move(out));
        if (codec_->failed()) {
          writer_->End();
          return Finish(routing::Outcome::kError, "error");
        }
      }
      writer_->End();
      return Finish(routing::Outcome::kSuccess, "success");
    }
    // A whole body: a non-streamed response, or an error status to a streamed request.
    if (upstream_status_ == 200) {
      boost::json::error_code ec;
      auto v = boost::json::parse(body_, ec);
      if (!ec && v.is_object()) usage_ = ParseUsage(v.get_object());
    }
    bool ok = upstream_status_ >= 200 && upstream_status_ < 400;
    if (codec_) {
      codec_->SendBody(*writer_, upstream_status_, std::move(body_), RoutedHeaders());
      return Finish(ok ? routing::Outcome::kSuccess : routing::Outcome::kError,
                    ok ? "success" : "error");
    }
    writer_->Send(upstream_status_,
                  upstream_content_type_.empty() ? "application/json" : upstream_content_type_,
                  std::move(body_), RoutedHeaders());
    Finish(ok ? routing::Outcome::kSuccess : routing::Outcome::kError, ok ? "success" : "error");
  }

 public:
  // AbortInFlight: ends the request with `s`; false if it had already finished.
  bool Abort(const Status& s) override {
    if (finished_) return false;
    spdlog::warn("request {}: aborted: {}", base_request_id_, s.message());
    finished_ = true;  // the cancelled call's completion is ignored
    if (call_) {
      auto call = call_;
      call->Cancel();
    }
    if (response_started_) {
      writer_->Write(codec_ ? codec_->OnStreamError(s) : http::FormatSse(http::OpenAiErrorBody(s)));
      writer_->End();
    } else if (codec_) {
      codec_->SendError(*writer_, s, RoutedHeaders());
    } else {
      writer_->Send(HttpStatusFor(s.code()), "application/json", http::OpenAiErrorBody(s),
                    RoutedHeaders());
    }
    Finish(routing::Outcome::kError, "error");
    return true;
  }

 private:
  void OnClientClosed() {
    if (finished_) return;
    spdlog::info("request {}: client disconnected; cancelling upstream", base_request_id_);
    if (call_) {
      auto call = call_;  // Cancel may complete the call and reset call_
      call->Cancel();
    }
    Finish(routing::Outcome::kCancelled, "cancelled");
  }

  // No upstream response to relay: answer with an OpenAI error.
  void FailBeforeResponse(const Status& s, const std::string& endpoint) {
    finished_ = true;
    std::string strategy = !decision_.strategy.empty() ? decision_.strategy
                           : !strategy_.empty()        ? strategy_
                                                       : ctx_->config.strategy;
    ctx_->stats.RecordRequest(endpoint, strategy, "error");
    if (writer_->closed()) return;
    if (codec_) return codec_->SendError(*writer_, s, {});
    http::SendOpenAiError(*writer_, s);
  }

  void Finish(routing::Outcome outcome, const char* label) {
    finished_ = true;
    Seconds now = ctx_->clock.Now();
    if (dispatched_) {
      ctx_->router.OnFinished(features_.request_id, usage_.value_or(routing::Usage{}), outcome,
                              now);
    }
    ctx_->stats.RecordRequest(decision_.endpoint, decision_.strategy, label);
    if (outcome == routing::Outcome::kSuccess) {
      ctx_->stats.RecordE2e(req_.model, now - arrival_);
      if (usage_) ctx_->stats.RecordUsage(req_.tenant, req_.model, *usage_);
    }
  }

  // Whether a failure before the first byte on the current endpoint may be retried:
  // once for local endpoints, retries_before_first_byte times for a provider.
  bool CanRetry() const {
    const Endpoint* ep = ctx_->Find(decision_.endpoint);
    int budget = ep && ep->provider ? ep->provider->retries_before_first_byte : 1;
    return retries_ < budget;
  }

  http::Headers RoutedHeaders() const {
    http::Headers h;
    h.Add("x-kinference-endpoint", decision_.endpoint);
    h.Add("x-kinference-strategy", decision_.strategy);
    h.Add("x-kinference-predicted-ttft-ms",
          fmt::format("{:.3f}", decision_.predicted_ttft_s * 1e3));
    return h;
  }

  std::shared_ptr<GatewayContext> ctx_;
  std::shared_ptr<http::ResponseWriter> writer_;
  ParsedRequest req_;
  routing::RequestFeatures features_;
  std::string base_request_id_;
  std::string strategy_;  // as requested; empty: the config default
  std::string path_;
  std::string upstream_body_;
  Seconds arrival_;
  std::shared_ptr<ResponseCodec> codec_;  // null: OpenAI pass-through

  routing::Decision decision_;
  std::vector<routing::EndpointId> tried_;
  std::string last_error_ = "no healthy endpoint";
  std::shared_ptr<http::Call> call_;
  int retries_ = 0;
  bool dispatched_ = false;
  bool retry_pending_ = false;
  bool response_started_ = false;
  bool stream_pending_ = false;  // upstream streamed 200 head seen, client head held back
  bool finished_ = false;
  int upstream_status_ = 0;
  std::string upstream_content_type_;
  std::string body_;
  http::SseParser parser_;
  std::optional<routing::Usage> usage_;
  std::optional<Seconds> first_token_;
  Seconds last_token_ = 0;
};

}  // namespace

size_t AbortInFlight(GatewayContext& ctx, const Status& status) {
  std::vector<std::shared_ptr<InFlightRequest>> live;
  for (auto& w : ctx.in_flight) {
    if (auto e = w.lock()) live.push_back(std::move(e));
  }
  ctx.in_flight.clear();
  size_t n = 0;
  for (auto& e : live) n += e->Abort(status) ? 1 : 0;
  return n;
}

void HandleCompletion(const std::shared_ptr<GatewayContext>& ctx, ApiKind kind,
                      http::Request request, std::shared_ptr<http::ResponseWriter> writer) {
  Seconds arrival = ctx->clock.Now();
  auto tenant = Identify(ctx->config.tenants, request.headers, ApiFront::kOpenAi);
  if (!tenant.ok()) return http::SendOpenAiError(*writer, tenant.status());
  auto parsed = ParseRequest(kind, request.body);
  if (!parsed.ok()) return http::SendOpenAiError(*writer, parsed.status());
  parsed->tenant = std::move(*tenant);
  HandleParsed(ctx, std::move(*parsed), std::move(request.path), request.headers, arrival,
               std::move(writer), nullptr);
}

void HandleParsed(const std::shared_ptr<GatewayContext>& ctx, ParsedRequest parsed,
                  std::string upstream_path, const http::Headers& headers, Seconds arrival,
                  std::shared_ptr<http::ResponseWriter> writer,
                  std::shared_ptr<ResponseCodec> codec) {
  auto fail = [&](const Status& s) {
    if (codec) return codec->SendError(*writer, s, {});
    http::SendOpenAiError(*writer, s);
  };
  if (!ctx->ServesModel(parsed.model)) {
    Status s(ErrorCode::kNotFound, "The model `" + parsed.model + "` does not exist.");
    s.WithParam("model");
    return fail(s);
  }
  std::string strategy(headers.Find(kStrategyHeader));
  if (!strategy.empty() && !ctx->KnowsStrategy(strategy)) {
    Status s(ErrorCode::kInvalidArgument, "Unknown routing strategy '" + strategy + "'");
    s.WithParam(kStrategyHeader);
    return fail(s);
  }
  routing::RequestFeatures features;
  features.request_id = fmt::format("kgw-{}", ctx->next_request_id++);
  features.model = parsed.model;
  features.block_hashes = routing::ChainedBlockHashes(parsed.prompt_text, ctx->config.block_chars);
  features.prompt_chars = parsed.prompt_text.size();
  features.max_tokens = parsed.max_tokens;
  auto exchange = std::make_shared<Exchange>(ctx, std::move(writer), std::move(parsed),
                                             std::move(features), std::move(strategy),
                                             std::move(upstream_path), arrival, std::move(codec));
  exchange->Start();
}

}  // namespace kinference::gateway
