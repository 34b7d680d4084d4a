#include "gateway/proxy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <ctime>
#include <optional>

#include "gateway/anthropic/messages_request.h"
#include "gateway/anthropic/upstream_response.h"
#include "gateway/policy_gate.h"
#include "http/client.h"
#include "http/sse.h"

namespace kinference::gateway {
namespace {

// Connect timeout (real seconds) for upstream calls: loopback and in-cluster connects
// take well under a second; a longer wait means the endpoint is down.
constexpr double kConnectTimeoutS = 3.0;

// The status for an upstream that failed the gateway (not the client): bad gateway.
constexpr int kBadGateway = 502;

// An OpenAI-shaped error body for a 502 (the shape MessagesResponseToOpenAi uses too).
std::string BadGatewayBody(std::string_view message) {
  return boost::json::serialize(
      boost::json::object{{"error", boost::json::object{{"message", message},
                                                        {"type", "api_error"},
                                                        {"param", nullptr},
                                                        {"code", kBadGateway}}}});
}

// Whether `ep` can take the request at all: no Anthropic provider for /v1/completions
// (the Messages API has no completions counterpart), only Anthropic providers for a
// /v1/messages request only they can take (`native` untranslatable).
bool SupportsRequest(const Endpoint& ep, ApiKind kind, const anthropic::NativeRequest* native) {
  const bool native_only = native && !native->untranslatable.ok();
  const bool anthropic = ep.provider && ep.provider->api == ProviderApi::kAnthropic;
  if (native_only) return anthropic;
  return !(kind == ApiKind::kCompletions && anthropic);
}

// Drops the endpoints that cannot take the request (SupportsRequest; policies never saw
// them either). When that leaves none on a first attempt: the 400 to answer.
Status DropUnsupportedEndpoints(const GatewayContext& ctx, ApiKind kind,
                                const anthropic::NativeRequest* native, bool first_attempt,
                                std::vector<routing::EndpointId>& candidates) {
  const bool native_only = native && !native->untranslatable.ok();
  if (kind != ApiKind::kCompletions && !native_only) return Status::Ok();
  size_t dropped = std::erase_if(candidates, [&](const routing::EndpointId& id) {
    const Endpoint* ep = ctx.Find(id);
    return !ep || !SupportsRequest(*ep, kind, native);
  });
  if (dropped == 0 || !candidates.empty() || !first_attempt) return Status::Ok();
  if (native_only) return native->untranslatable;
  Status s(ErrorCode::kInvalidArgument,
           "This model is served by an Anthropic provider, which has no /v1/completions; "
           "use /v1/chat/completions");
  s.WithParam("model");
  return s;
}

class Exchange : public InFlightRequest, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<GatewayContext> ctx, std::shared_ptr<http::ResponseWriter> writer,
           ParsedRequest request, routing::RequestFeatures features, std::string strategy,
           std::string path, Seconds arrival, std::shared_ptr<ResponseCodec> codec,
           PolicyRequest policy)
      : ctx_(std::move(ctx)),
        writer_(std::move(writer)),
        req_(std::move(request)),
        features_(std::move(features)),
        base_request_id_(features_.request_id),
        strategy_(std::move(strategy)),
        path_(std::move(path)),
        upstream_body_(UpstreamBody(req_)),
        arrival_(arrival),
        codec_(std::move(codec)),
        policy_(std::move(policy)) {}

  // The request's policy input; RunClassifier adds its tags before Start.
  PolicyRequest& policy_request() { return policy_; }

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
    if (!evaluated_ && !ApplyPolicies()) return;     // rejected: answered
    if (codec_) codec_->SetServedModel(req_.model);  // a policy's alternative, if any
    // Retries stay within the set the policies allowed for the first attempt.
    std::vector<routing::EndpointId> candidates = allowed_;
    std::erase_if(candidates, [&](const auto& id) {
      return std::find(tried_.begin(), tried_.end(), id) != tried_.end();
    });
    if (Status s = DropUnsupportedEndpoints(*ctx_, req_.kind,
                                            codec_ ? codec_->native_anthropic() : nullptr,
                                            tried_.empty(), candidates);
        !s.ok())
      return FailBeforeResponse(s, "none");
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
    record_.request_id = features_.request_id;
    record_.endpoint = decision_.endpoint;
    record_.predicted_ttft_s = decision_.predicted_ttft_s;
    LogDecision(*ctx_, record_);
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
    decoder_.reset();
    relay_raw_ = false;
    if (const ProviderConfig* p = ep->provider) {
      call.target = ProviderTarget(*p, path_);
      if (p->api == ProviderApi::kAnthropic) {
        if (Status s = BuildAnthropicCall(*p, ep->api_key, call); !s.ok()) return FailUnsendable(s);
      } else {
        ParsedRequest rewritten = req_;
        rewritten.body["model"] = p->model;
        call.body = UpstreamBody(rewritten);
        call.headers.Add("authorization", "Bearer " + ep->api_key);
      }
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

  // The call to an Anthropic provider: the client's own body for the /v1/messages front
  // (native passthrough), else the chat request translated (anthropic/upstream_request.h).
  // Headers per Anthropic API reference "Overview": x-api-key, anthropic-version.
  Status BuildAnthropicCall(const ProviderConfig& p, const std::string& key,
                            http::ClientRequest& call) {
    const anthropic::NativeRequest* native = codec_ ? codec_->native_anthropic() : nullptr;
    Result<std::string> body =
        native ? anthropic::NativeRequestBody(native->body, p.model)
               : anthropic::BuildMessagesRequest(req_.body, {p.model, p.default_max_tokens});
    if (!body.ok()) return body.status();
    call.body = std::move(*body);
    call.headers.Add("x-api-key", key);
    call.headers.Add("anthropic-version", native && !native->anthropic_version.empty()
                                              ? native->anthropic_version
                                              : p.anthropic_version);
    if (native && !native->anthropic_beta.empty())
      call.headers.Add("anthropic-beta", native->anthropic_beta);
    relay_raw_ = native != nullptr;
    decoder_.emplace(static_cast<int64_t>(std::time(nullptr)));
    return Status::Ok();
  }

  // The request cannot be sent to the picked endpoint (it does not translate for an
  // Anthropic provider): a client error, counted as an error.
  void FailUnsendable(const Status& s) {
    if (codec_) {
      codec_->SendError(*writer_, s, RoutedHeaders());
    } else {
      writer_->Send(HttpStatusFor(s.code()), "application/json", http::OpenAiErrorBody(s),
                    RoutedHeaders());
    }
    Finish(routing::Outcome::kError, "error");
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
    if (relay_raw_) writer_->Write(std::string(data));  // passthrough: the bytes as they came
    parser_.Feed(data, [this](const http::SseEvent& ev) { OnUpstreamEvent(ev); });
  }

  // An Anthropic provider's event is first translated into the OpenAI chunks it means.
  void OnUpstreamEvent(const http::SseEvent& ev) {
    if (!decoder_) return OnEvent(ev);
    for (const auto& out : decoder_->OnEvent(ev)) OnEvent(out);
  }

  // The bytes that end a started stream with `err`.
  std::string StreamErrorBytes(const Status& err) {
    if (relay_raw_) {
      const char* type = err.code() == ErrorCode::kDeadlineExceeded ? "timeout_error" : "api_error";
      return http::FormatSse(anthropic::ErrorBody(type, err.message()), "error");
    }
    return codec_ ? codec_->OnStreamError(err) : http::FormatSse(http::OpenAiErrorBody(err));
  }

  void OnEvent(const http::SseEvent& ev) {
    if (finished_) return;
    ChunkInfo info = InspectChunk(ev.data);
    if (info.usage) usage_ = info.usage;
    reply_ += info.content;
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
    if (relay_raw_) return;  // observed only: OnData relayed the upstream bytes
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
      ctx_->OnUpstreamResult(decision_.endpoint,
                             status.ok() && upstream_status_ < 500 && !CredentialsRejected());
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
        writer_->Write(StreamErrorBytes(err));
        writer_->End();
      } else if (codec_) {
        codec_->SendError(*writer_, err, RoutedHeaders());
      } else {
        writer_->Send(HttpStatusFor(code), "application/json", http::OpenAiErrorBody(err),
                      RoutedHeaders());
      }
      return Finish(routing::Outcome::kError, "error");
    }
    if (!response_started_ && CredentialsRejected()) return FailCredentialsRejected();
    if (response_started_) {
      if (decoder_) {
        std::vector<http::SseEvent> tail = decoder_->OnEnd();  // error unless message_stop
        if (relay_raw_ && !tail.empty()) {
          writer_->Write(http::FormatSse(
              anthropic::ErrorBody("api_error", "upstream stream ended before message_stop"),
              "error"));
        } else {
          for (const auto& ev : tail) OnEvent(ev);
        }
        if (relay_raw_ || decoder_->failed()) {
          writer_->End();
          bool ok = !decoder_->failed();
          return Finish(ok ? routing::Outcome::kSuccess : routing::Outcome::kError,
                        ok ? "success" : "error");
        }
      }
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
    if (decoder_ && relay_raw_) return RelayWholeBody();
    if (decoder_) {
      auto t = anthropic::MessagesResponseToOpenAi(upstream_status_, body_, std::time(nullptr));
      upstream_status_ = t.status;
      body_ = std::move(t.body);
      upstream_content_type_ = "application/json";
    }
    if (upstream_status_ == 200) {
      boost::json::error_code ec;
      auto v = boost::json::parse(body_, ec);
      if (!ec && v.is_object()) {
        usage_ = ParseUsage(v.get_object());
        reply_ = ReplyContent(v.get_object());
      }
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

  // The upstream answered 401/403: it rejected the gateway's own credentials (a
  // provider's api key, a local vLLM's --api-key), which is no fault of the client.
  bool CredentialsRejected() const { return upstream_status_ == 401 || upstream_status_ == 403; }

  // Answers 502 in the front's error shape; the upstream's body is dropped (it may quote
  // part of the key) and the error is logged for the operator (never the key).
  void FailCredentialsRejected() {
    std::string message = fmt::format("upstream {} rejected the gateway's credentials ({})",
                                      decision_.endpoint, upstream_status_);
    spdlog::error("request {}: {}; check the api key the gateway sends it", base_request_id_,
                  message);
    if (relay_raw_) {
      writer_->Send(kBadGateway, "application/json", anthropic::ErrorBody("api_error", message),
                    RoutedHeaders());
    } else if (codec_) {  // the Anthropic front maps an upstream 502 to its own shape
      codec_->SendBody(*writer_, kBadGateway, BadGatewayBody(message), RoutedHeaders());
    } else {
      writer_->Send(kBadGateway, "application/json", BadGatewayBody(message), RoutedHeaders());
    }
    Finish(routing::Outcome::kError, "error");
  }

  // Native passthrough of a whole Anthropic response: relayed unchanged; usage is read
  // from its OpenAI translation (cache reads counted once). A 200 that is not a Messages
  // object is answered 502 in Anthropic's error shape, as on the translated path.
  void RelayWholeBody() {
    auto t = anthropic::MessagesResponseToOpenAi(upstream_status_, body_, 0);
    if (upstream_status_ == 200 && t.status != 200) {
      std::string message =
          fmt::format("upstream {} answered 200 without a message", decision_.endpoint);
      spdlog::warn("request {}: {}", base_request_id_, message);
      writer_->Send(kBadGateway, "application/json", anthropic::ErrorBody("api_error", message),
                    RoutedHeaders());
      return Finish(routing::Outcome::kError, "error");
    }
    if (t.status == 200) {
      boost::json::error_code ec;
      auto v = boost::json::parse(t.body, ec);
      if (!ec && v.is_object()) {
        usage_ = ParseUsage(v.get_object());
        reply_ = ReplyContent(v.get_object());
      }
    }
    bool ok = upstream_status_ >= 200 && upstream_status_ < 400;
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
      writer_->Write(StreamErrorBytes(s));
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

  // Evaluates the request's policy snapshot, once (first attempt): narrows the endpoints
  // the router may pick (allowed_), switches to an alternative model, or answers the
  // rejection (false).
  bool ApplyPolicies() {
    evaluated_ = true;
    Seconds now = ctx_->clock.Now();
    // Endpoints that could never serve this API are no candidates (nor in a 403's list).
    const anthropic::NativeRequest* native = codec_ ? codec_->native_anthropic() : nullptr;
    auto ev = EvaluatePolicies(*ctx_, policy_, features_, now, [&](const Endpoint& ep) {
      return SupportsRequest(ep, req_.kind, native);
    });
    if (!ev.ok()) {
      record_ = RejectionRecord(policy_, ev.status(), now, base_request_id_);
      CountDecision(*ctx_, record_);
      LogDecision(*ctx_, record_);
      spdlog::info("request {}: {}", base_request_id_, ev.status().message());
      FailBeforeResponse(ev.status(), "none", "rejected");
      return false;
    }
    record_ = policy::RoutedRecord(*ev, policy_.info, now, base_request_id_, "", 0);
    record_.predicted_ttft_s.reset();
    CountDecision(*ctx_, record_);
    allowed_ = AllowedEndpoints(*ctx_, *ev, req_.model);
    if (ev->chosen_model != req_.model) {  // an alternative serves it
      req_.model = ev->chosen_model;
      req_.body["model"] = ev->chosen_model;
      upstream_body_ = UpstreamBody(req_);
      features_.model = ev->chosen_model;
    }
    return true;
  }

  // x-kinference-decision once policies were evaluated (also on errors after that).
  http::Headers DecisionHeaders() const {
    http::Headers h;
    if (evaluated_) h.Add(std::string(policy::kDecisionHeader), DecisionHeaderValue(record_));
    return h;
  }

  // No upstream response to relay: answer with an error in the API's shape.
  void FailBeforeResponse(const Status& s, const std::string& endpoint,
                          const char* outcome = "error") {
    finished_ = true;
    std::string strategy = !decision_.strategy.empty() ? decision_.strategy
                           : !strategy_.empty()        ? strategy_
                                                       : ctx_->config.strategy;
    ctx_->stats.RecordRequest(endpoint, strategy, outcome);
    if (evaluated_ && record_.outcome == "routed" && record_.endpoint.empty()) {
      record_.outcome = "error";  // evaluated, but nothing could be picked
      record_.endpoint = "none";
      record_.message = s.message();
      LogDecision(*ctx_, record_);
    }
    if (writer_->closed()) return;
    if (codec_) return codec_->SendError(*writer_, s, DecisionHeaders());
    writer_->Send(HttpStatusFor(s.code()), "application/json", http::OpenAiErrorBody(s),
                  DecisionHeaders());
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
      // vLLM keeps the reply's KV too: the next turn re-sends prompt + reply.
      if (dispatched_ && req_.kind == ApiKind::kChatCompletions) {
        ctx_->router.OnCompletionText(
            decision_.endpoint,
            routing::ChainedBlockHashes(RenderWithReply(req_.prompt_text, reply_),
                                        ctx_->config.block_chars),
            now);
      }
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
    http::Headers h = DecisionHeaders();
    h.Add(kModelHeader, req_.model);  // the served model (a policy may pick an alternative)
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
  PolicyRequest policy_;                  // snapshot + request info, for the whole request
  bool evaluated_ = false;
  std::vector<routing::EndpointId> allowed_;  // what the policies left for the router
  policy::DecisionRecord record_;             // routed: updated at every pick

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
  // Anthropic provider on this attempt: its events become OpenAI chunks here; with
  // relay_raw_ (native passthrough) they are only observed and the bytes relayed.
  std::optional<anthropic::MessagesStreamDecoder> decoder_;
  bool relay_raw_ = false;
  std::optional<routing::Usage> usage_;
  std::string reply_;  // choice 0's reply text (chat), for Router::OnCompletionText
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
  // /v1/messages: taggers scan the client's original Anthropic body, not the translation.
  const anthropic::NativeRequest* native = codec ? codec->native_anthropic() : nullptr;
  PolicyRequest policy =
      BeginPolicyRequest(*ctx, parsed, headers, native ? native->body : std::string_view());
  std::string text = ctx->policy.classifier ? policy.scan_text : std::string();
  auto client = writer;
  auto exchange = std::make_shared<Exchange>(
      ctx, std::move(writer), std::move(parsed), std::move(features), std::move(strategy),
      std::move(upstream_path), arrival, std::move(codec), std::move(policy));
  // The external classifier (if any) runs first; a client gone meanwhile is dropped.
  RunClassifier(*ctx, exchange->policy_request(), std::move(text), [exchange, client] {
    if (!client->closed()) exchange->Start();
  });
}

}  // namespace kinference::gateway
