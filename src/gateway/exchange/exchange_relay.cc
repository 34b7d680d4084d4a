// The response half of Exchange (exchange.h): the upstream call's callbacks (head, body
// bytes, completion with its retry before the first body byte) and what they relay to the
// client: the held SSE head, events one by one (OpenAI chunks, a codec's rewrite, or an
// Anthropic provider's decoded or passed-through events), whole bodies (a non-streamed
// request's stream rebuilt by the StreamAssembler included), error ends.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstddef>
#include <ctime>
#include <utility>

#include "api/anthropic/messages_request.h"
#include "api/openai/error.h"
#include "api/retry_after.h"
#include "common/redact.h"
#include "gateway/exchange/exchange.h"

namespace kinference::gateway {
namespace {

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

// Whether `body` is an API error meant for the client: OpenAI's, vLLM's or Anthropic's
// {"error": {...}}, or vLLM's older {"object": "error", "message": ...}. Anything else is
// not (empty, plain text, a proxy's HTML page, or a proxy's own JSON such as Kong's
// {"message": "no Route matched with those values"}).
bool IsApiErrorBody(std::string_view body) {
  boost::json::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  const boost::json::object* o = ec ? nullptr : v.if_object();
  if (o == nullptr) return false;
  if (const boost::json::value* e = o->if_contains("error"); e != nullptr && e->is_object())
    return true;
  const boost::json::value* object = o->if_contains("object");
  return object != nullptr && object->is_string() && object->get_string() == "error";
}

// OpenAI error type for an upstream 4xx answered in the gateway's words: as the gateway's
// own errors of that status (OpenAiErrorType, common/status.h). 401 and 403 never get
// here (FailCredentialsRejected).
const char* OpenAiTypeForUpstream4xx(int status) {
  switch (status) {
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    default:
      return "invalid_request_error";
  }
}

// error.type of an OpenAI- or Anthropic-shaped error body; empty for anything else.
std::string UpstreamErrorType(std::string_view body) {
  boost::json::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return {};
  const boost::json::value* error = v.get_object().if_contains("error");
  if (error == nullptr || !error->is_object()) return {};
  const boost::json::value* type = error->get_object().if_contains("type");
  return type != nullptr && type->is_string() ? std::string(type->get_string()) : std::string();
}

// usage.cache_creation_input_tokens of an Anthropic Messages body (0 when absent).
int64_t AnthropicCacheCreation(std::string_view body) {
  boost::json::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return 0;
  const boost::json::value* usage = v.get_object().if_contains("usage");
  if (usage == nullptr || !usage->is_object()) return 0;
  const boost::json::value* n = usage->get_object().if_contains("cache_creation_input_tokens");
  return n != nullptr && n->is_int64() && n->get_int64() > 0 ? n->get_int64() : 0;
}

}  // namespace

void Exchange::OnHeaders(int status, const http::Headers& headers) {
  if (finished_) return;
  upstream_status_ = status;
  upstream_content_type_ = std::string(headers.Find("content-type"));
  upstream_retry_.reset();
  upstream_should_retry_.clear();
  if (status == 429 || status == 503 || status == 529) {
    upstream_retry_ = api::ParseRetryDelay(headers.Find("retry-after"),
                                           headers.Find("retry-after-ms"), std::time(nullptr));
    std::string_view should = headers.Find("x-should-retry");
    if (should == "true" || should == "false") upstream_should_retry_ = std::string(should);
    // Cooldown (routing/router.h): the endpoint is skipped until its wait has passed, by
    // this request's retry as by every other request.
    if (upstream_retry_) {
      ctx_->CoolDown(decision_.endpoint, upstream_retry_->milliseconds
                                             ? *upstream_retry_->milliseconds / 1000.0
                                             : static_cast<double>(upstream_retry_->seconds));
    }
  }
  if (status >= 500 && CanRetry()) {
    retry_pending_ = true;  // discard the error body, retry when it completes
    return;
  }
  // The client's 200 + SSE head waits for the first body byte: vLLM sends its headers
  // at once, so a replica dying before the first token is still retried (OnComplete).
  stream_pending_ = req_.stream && status == 200;
  // A streamed call for a non-streamed request answered 200 without a stream (an
  // OpenAI-compatible upstream that ignores `stream`): its whole body is the answer.
  if (assembler_ && status == 200 && !upstream_content_type_.starts_with("text/event-stream")) {
    assembler_.reset();
  }
}

void Exchange::StartClientStream(std::string first) {
  stream_pending_ = false;
  response_started_ = true;
  // The session holds the head until this handler returns: with `first` in one write.
  writer_->StartStream(200, "text/event-stream", RoutedHeaders());
  writer_->Write(std::move(first));
}

void Exchange::OnData(std::string_view data) {
  if (finished_ || retry_pending_) return;
  // The held head goes out with the events of the first body bytes, in one write.
  const bool start = stream_pending_ && !data.empty();
  if (start) response_started_ = true;
  if (assembler_ && upstream_status_ == 200) {  // observed here, answered whole at the end
    if (!data.empty()) assembled_data_ = true;
    parser_.FeedViews(data, [this](const api::SseEventView& ev) { OnEvent(ev); });
    return;
  }
  if (!response_started_) {
    body_.append(data);
    return;
  }
  // The events of one read go to the client as one write.
  parser_.FeedViews(data, [this](const api::SseEventView& ev) { OnUpstreamEvent(ev); });
  if (start) {
    StartClientStream(std::exchange(relay_, std::string()));
  } else {
    FlushRelay();
  }
  ApplyBackpressure();
}

void Exchange::Relay(const api::SseEventView& ev) {
  if (!ev.formatted.empty()) {
    relay_.append(ev.formatted);  // exactly what FormatSse would write
  } else {
    relay_.append(api::FormatSse(ev.data, ev.event));
  }
}

void Exchange::FlushRelay() {
  if (relay_.empty()) return;
  writer_->Write(std::move(relay_));
  relay_ = std::string();
}

void Exchange::ApplyBackpressure() {
  if (paused_ || finished_ || !call_ || writer_->closed()) return;
  const size_t high = ctx_->config.backpressure.client_buffer_bytes;
  if (writer_->pending_bytes() <= high) return;
  paused_ = true;
  call_->Pause();  // TCP flow control now slows the upstream
  std::weak_ptr<Exchange> weak = weak_from_this();
  writer_->OnWritable(high / 2, [weak] {
    if (auto self = weak.lock()) self->ResumeUpstream();
  });
  if (!stall_timer_) stall_timer_ = std::make_unique<boost::asio::steady_timer>(ctx_->executor);
  stall_timer_->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(ctx_->config.backpressure.client_stall_timeout_s)));
  stall_timer_->async_wait([weak](const boost::system::error_code& ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->OnClientStalled();
  });
}

void Exchange::ResumeUpstream() {
  if (!paused_ || finished_) return;
  paused_ = false;
  if (stall_timer_) stall_timer_->cancel();
  if (call_) call_->Resume();
}

void Exchange::OnClientStalled() {
  if (!paused_ || finished_) return;
  spdlog::warn(
      "request {}: client took nothing for {} s ({} bytes queued); closing it and "
      "cancelling the upstream request",
      req_.request_id, ctx_->config.backpressure.client_stall_timeout_s, writer_->pending_bytes());
  ctx_->stats.RecordClientStall();
  last_error_ = "client stalled";
  finished_ = true;  // the cancelled call's completion is ignored
  if (call_) {
    auto call = call_;
    call->Cancel();  // vLLM sees the connection close and aborts the request
  }
  writer_->Abort();
  Finish(routing::Outcome::kCancelled, "cancelled");
}

void Exchange::OnUpstreamEvent(const api::SseEventView& ev) {
  if (relay_raw_) {
    // Passthrough (an Anthropic provider behind /v1/messages): each event as it came, but
    // an error event in the gateway's own words; the provider's go to the log, redacted.
    std::optional<std::string> own;
    if (ev.event == "error") own = api::anthropic::ReplaceStreamError(ev.data, req_.request_id);
    if (own) {
      spdlog::warn("request {}: provider {} reported an error mid-stream: {}", req_.request_id,
                   decision_.endpoint, RedactSecrets(ev.data, ctx_->ApiKeys()));
    }
    if (own) {
      relay_.append(api::FormatSse(*own, ev.event));
    } else {
      Relay(ev);
    }
  }
  if (!decoder_) return OnEvent(ev);
  for (const auto& out :
       decoder_->OnEvent(api::SseEvent{std::string(ev.event), std::string(ev.data)}))
    OnEvent(api::SseEventView{out.event, out.data, {}});
}

std::string Exchange::StreamErrorBytes(const Status& err, bool abort) {
  if (relay_raw_) {
    const char* type = abort ? api::anthropic::ErrorType(err.code())
                       : err.code() == ErrorCode::kDeadlineExceeded ? "timeout_error"
                                                                    : "api_error";
    return api::FormatSse(api::anthropic::ErrorBody(type, err.message()), "error");
  }
  if (!codec_) return api::FormatSse(api::OpenAiErrorBody(err));
  return abort ? codec_->OnAbort(err) : codec_->OnStreamError(err);
}

void Exchange::OnEvent(const api::SseEventView& ev) {
  if (finished_) return;
  // Without an assembler only what InspectChunk reads is needed: one pass over the text
  // (api::ScanStreamChunk) for a token's chunk. Otherwise (and for the usage chunk) it is
  // parsed once for the inspection and the assembler, into a stack buffer (a token's chunk
  // is a few hundred bytes; a larger one spills to the heap).
  alignas(std::max_align_t) unsigned char scratch[4096];
  boost::json::monotonic_resource arena(scratch, sizeof scratch);
  std::optional<api::ChunkInfo> scanned;
  if (!assembler_) scanned = api::ScanStreamChunk(ev.data);
  std::optional<api::StreamChunk> chunk;
  if (!scanned) chunk.emplace(api::ParseStreamChunk(ev.data, &arena));
  api::ChunkInfo info = scanned ? std::move(*scanned) : api::InspectChunk(*chunk);
  if (info.usage) usage_ = info.usage;
  reply_ += info.content;
  if (info.has_content) ++content_chunks_;
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
  if (assembler_) return assembler_->Add(*chunk);
  if (relay_raw_) return;  // observed only: OnUpstreamEvent relayed the provider's event
  if (codec_) {
    relay_.append(codec_->OnEvent(ev));
    return;
  }
  if (info.usage_only && !req_.client_wants_usage) return;
  // An upstream error event: the gateway's own (status class, request id); the upstream's
  // words go to the log, redacted.
  if (auto own = api::ReplaceUpstreamStreamError(ev.data, req_.request_id)) {
    spdlog::warn("request {}: upstream {} reported an error mid-stream: {}", req_.request_id,
                 decision_.endpoint, RedactSecrets(ev.data, ctx_->ApiKeys()));
    upstream_stream_error_ = true;
    last_error_ = "upstream reported an error mid-stream";
    relay_.append(api::FormatSse(*own, ev.event));
    return;
  }
  Relay(ev);
}

void Exchange::OnComplete(Status status) {
  call_.reset();
  if (finished_) return;
  bool connect_failure =
      !status.ok() && upstream_status_ == 0 && status.code() == ErrorCode::kUnavailable;
  // 200 + SSE head, then the connection failed before any body byte (a streamed call for
  // a non-streamed request too).
  const bool awaiting_body =
      stream_pending_ || (assembler_ && upstream_status_ == 200 && !assembled_data_);
  bool dropped_before_body = !status.ok() && awaiting_body &&
                             status.code() != ErrorCode::kCancelled &&
                             status.code() != ErrorCode::kDeadlineExceeded;
  RecordEndpointResult(status);
  if ((retry_pending_ || connect_failure || dropped_before_body) && CanRetry()) {
    // The log has the details (an address, the upstream's words); the client message
    // names neither.
    spdlog::warn("request {}: upstream {} {}; retrying on another endpoint", req_.request_id,
                 decision_.endpoint,
                 retry_pending_ ? fmt::format("answered {}", upstream_status_)
                                : fmt::format("failed: {}", status.message()));
    last_error_ = GatewayMessage(
        retry_pending_
            ? fmt::format("The model server failed (upstream status {}xx)", upstream_status_ / 100)
            : std::string("The model server could not be reached or closed the connection"));
    stream_pending_ = false;
    ctx_->router.OnFinished(features_.request_id, {}, routing::Outcome::kError, ctx_->clock.Now());
    ctx_->stats.RecordRetry(decision_.endpoint);
    ctx_->OnUpstreamResult(decision_.endpoint, false);
    ReleaseSlot();
    ++retries_;
    tried_.push_back(decision_.endpoint);
    dispatched_ = false;
    retry_pending_ = false;
    upstream_status_ = 0;
    body_.clear();
    parser_ = api::SseParser();
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
    spdlog::warn("request {}: upstream {} failed: {}", req_.request_id, decision_.endpoint,
                 status.message());
    ErrorCode code = status.code() == ErrorCode::kDeadlineExceeded ? ErrorCode::kDeadlineExceeded
                                                                   : ErrorCode::kUnavailable;
    std::string message =
        GatewayMessage(code == ErrorCode::kDeadlineExceeded
                           ? "The model server did not finish within the request timeout"
                           : "The connection to the model server failed");
    Status err(code, message);
    last_error_ = message;
    if (response_started_) {
      writer_->Write(StreamErrorBytes(err));
      writer_->End();
    } else if (codec_) {
      codec_->SendError(*writer_, err, RoutedHeaders());
    } else {
      writer_->Send(HttpStatusFor(code), "application/json", api::OpenAiErrorBody(err),
                    RoutedHeaders());
    }
    return Finish(routing::Outcome::kError, "error");
  }
  if (!response_started_ && CredentialsRejected()) return FailCredentialsRejected();
  if (assembler_ && upstream_status_ == 200) {
    Result<std::string> rebuilt = assembler_->Finish();
    if (!rebuilt.ok()) return FailAssembly(rebuilt.status());
    body_ = std::move(*rebuilt);
    upstream_content_type_ = "application/json";
  }
  if (response_started_) {
    if (decoder_) {
      std::vector<api::SseEvent> tail = decoder_->OnEnd();  // error unless message_stop
      if (relay_raw_ && !tail.empty()) {
        writer_->Write(api::FormatSse(
            api::anthropic::ErrorBody("api_error", "upstream stream ended before message_stop"),
            "error"));
      } else {
        for (const auto& ev : tail) OnEvent(api::SseEventView{ev.event, ev.data, {}});
        FlushRelay();
      }
      if (relay_raw_ || decoder_->failed()) {
        writer_->End();
        bool ok = !decoder_->failed();
        if (!ok) last_error_ = "upstream stream failed";  // an error event, or cut short
        return Finish(ok ? routing::Outcome::kSuccess : routing::Outcome::kError,
                      ok ? "success" : "error");
      }
    }
    if (codec_) {
      if (std::string out = codec_->OnEnd(); !out.empty()) writer_->Write(std::move(out));
      if (codec_->failed()) {
        last_error_ = "upstream stream failed";
        writer_->End();
        return Finish(routing::Outcome::kError, "error");
      }
    }
    writer_->End();
    // A stream that carried an upstream error event is an error, whatever came before.
    if (upstream_stream_error_) return Finish(routing::Outcome::kError, "error");
    return Finish(routing::Outcome::kSuccess, "success");
  }
  // A whole body: a non-streamed response, or an error status to a streamed request.
  // Anthropic's cache writes have no place in OpenAI's usage shape: read for billing.
  if (decoder_ && upstream_status_ == 200) cache_creation_ = AnthropicCacheCreation(body_);
  if (decoder_ && relay_raw_) return RelayWholeBody();
  if (decoder_) {
    auto t = api::anthropic::MessagesResponseToOpenAi(upstream_status_, body_, std::time(nullptr));
    upstream_status_ = t.status;
    body_ = std::move(t.body);
    upstream_content_type_ = "application/json";
  }
  if (upstream_status_ == 200) {
    boost::json::error_code ec;
    auto v = boost::json::parse(body_, ec);
    if (!ec && v.is_object()) {
      usage_ = api::ParseUsage(v.get_object());
      reply_ = api::ReplyContent(v.get_object());
    }
  }
  bool ok = upstream_status_ >= 200 && upstream_status_ < 400;
  SanitizeUpstreamError();
  if (codec_) {
    codec_->SendBody(*writer_, upstream_status_, std::move(body_), RelayedHeaders());
    return Finish(ok ? routing::Outcome::kSuccess : routing::Outcome::kError,
                  ok ? "success" : "error");
  }
  writer_->Send(upstream_status_,
                upstream_content_type_.empty() ? "application/json" : upstream_content_type_,
                std::move(body_), RelayedHeaders());
  Finish(ok ? routing::Outcome::kSuccess : routing::Outcome::kError, ok ? "success" : "error");
}

http::Headers Exchange::RelayedHeaders() const {
  http::Headers h = RoutedHeaders();
  if (upstream_status_ < 400) return h;
  if (upstream_retry_) {
    for (auto& [name, value] : api::RetryDelayHeaders(*upstream_retry_))
      h.Add(std::move(name), std::move(value));
  }
  if (!upstream_should_retry_.empty()) h.Add("x-should-retry", upstream_should_retry_);
  return h;
}

void Exchange::RecordEndpointResult(const Status& status) {
  using routing::RequestResult;
  RequestResult r = RequestResult::kSuccess;
  if (status.code() == ErrorCode::kCancelled || status.code() == ErrorCode::kDeadlineExceeded) {
    r = RequestResult::kOther;  // ours, not the endpoint's
  } else if (!status.ok()) {
    r = upstream_status_ == 0 ? RequestResult::kConnectFailure : RequestResult::kReset;
  } else if (upstream_status_ >= 500) {
    r = RequestResult::kServerError;
  }
  ctx_->OnRequestResult(decision_.endpoint, r);
}

void Exchange::SanitizeUpstreamError() {
  if (upstream_status_ < 400) return;
  const std::vector<std::string> keys = ctx_->ApiKeys();
  last_error_ = fmt::format("upstream answered {}", upstream_status_);
  if (upstream_status_ < 500 && body_.size() <= kMaxRedactedBytes) {
    if (IsApiErrorBody(body_)) {
      body_ = RedactSecrets(body_, keys);  // the client's own mistake: its words help it
      return;
    }
    // Empty, plain text, a proxy's HTML page or its own JSON: not the API's error shape,
    // and not words meant for the client (they may name an internal address). The log has
    // them (redacted); the client the gateway's words in the API's shape: Anthropic's on
    // passthrough, else OpenAI's (the Anthropic front's codec rewrites that into its own).
    spdlog::warn("request {}: upstream {} answered {} without an API error: {}", req_.request_id,
                 decision_.endpoint, upstream_status_, RedactSecrets(body_, keys));
    const std::string message = GatewayMessage(fmt::format(
        "The model server rejected the request (upstream status {}) without an error message",
        upstream_status_));
    if (relay_raw_) {
      body_ = api::anthropic::ErrorBody(api::anthropic::ErrorTypeForHttpStatus(upstream_status_),
                                        message);
    } else {
      body_ = boost::json::serialize(boost::json::object{
          {"error", boost::json::object{{"message", message},
                                        {"type", OpenAiTypeForUpstream4xx(upstream_status_)},
                                        {"param", nullptr},
                                        {"code", upstream_status_}}}});
    }
    upstream_content_type_ = "application/json";
    return;
  }
  spdlog::warn("request {}: upstream {} answered {}: {}", req_.request_id, decision_.endpoint,
               upstream_status_, RedactSecrets(body_, keys));
  // Overload keeps its class (Anthropic's 529 / overloaded_error; SDKs back off on it):
  // 503 overloaded_error here, 529 again on /v1/messages. The words are the gateway's.
  const bool overloaded = upstream_status_ == 529 || UpstreamErrorType(body_) == "overloaded_error";
  int status = overloaded                                           ? 503
               : upstream_status_ == 503 || upstream_status_ == 504 ? upstream_status_
               : upstream_status_ >= 500                            ? kBadGateway
                                                                    : upstream_status_;
  std::string message =
      GatewayMessage(fmt::format("The model server {} (upstream status {}xx)",
                                 overloaded                ? "is overloaded"
                                 : upstream_status_ >= 500 ? "failed"
                                                           : "rejected the request",
                                 upstream_status_ / 100));
  const char* type = overloaded                ? "overloaded_error"
                     : upstream_status_ >= 500 ? "api_error"
                                               : OpenAiTypeForUpstream4xx(upstream_status_);
  if (relay_raw_) {
    // Passthrough to /v1/messages: Anthropic's statuses and types, as on the translated
    // path (api::anthropic::TranslateResponse): overload (529, 503, overloaded_error) is
    // 529 overloaded_error, 504 timeout_error, other 5xx 502 api_error.
    upstream_status_ = overloaded || upstream_status_ == 503 ? 529 : status;
    body_ = api::anthropic::ErrorBody(api::anthropic::ErrorTypeForHttpStatus(upstream_status_),
                                      message);
  } else {
    body_ = boost::json::serialize(boost::json::object{
        {"error",
         boost::json::object{
             {"message", message}, {"type", type}, {"param", nullptr}, {"code", status}}}});
    upstream_status_ = status;
  }
  upstream_content_type_ = "application/json";
}

void Exchange::FailCredentialsRejected() {
  std::string message = fmt::format("upstream {} rejected the gateway's credentials ({})",
                                    decision_.endpoint, upstream_status_);
  spdlog::error("request {}: {}; check the api key the gateway sends it", req_.request_id, message);
  last_error_ = message;
  if (relay_raw_) {
    writer_->Send(kBadGateway, "application/json", api::anthropic::ErrorBody("api_error", message),
                  RoutedHeaders());
  } else if (codec_) {  // the Anthropic front maps an upstream 502 to its own shape
    codec_->SendBody(*writer_, kBadGateway, BadGatewayBody(message), RoutedHeaders());
  } else {
    writer_->Send(kBadGateway, "application/json", BadGatewayBody(message), RoutedHeaders());
  }
  Finish(routing::Outcome::kError, "error");
}

void Exchange::FailAssembly(const Status& s) {
  // The log has the endpoint and the upstream's words (redacted); the client the gateway's.
  spdlog::warn("request {}: upstream {}: {}{}{}", req_.request_id, decision_.endpoint, s.message(),
               assembler_->upstream_error().empty() ? "" : ": ",
               RedactSecrets(assembler_->upstream_error(), ctx_->ApiKeys()));
  std::string message = GatewayMessage("The model server's response stream failed");
  last_error_ = message;
  if (codec_) {  // the Anthropic front maps an upstream 502 to its own shape
    codec_->SendBody(*writer_, kBadGateway, BadGatewayBody(message), RoutedHeaders());
  } else {
    writer_->Send(kBadGateway, "application/json", BadGatewayBody(message), RoutedHeaders());
  }
  Finish(routing::Outcome::kError, "error");
}

void Exchange::RelayWholeBody() {
  auto t = api::anthropic::MessagesResponseToOpenAi(upstream_status_, body_, 0);
  if (upstream_status_ == 200 && t.status != 200) {
    std::string message =
        fmt::format("upstream {} answered 200 without a message", decision_.endpoint);
    spdlog::warn("request {}: {}", req_.request_id, message);
    last_error_ = message;
    writer_->Send(kBadGateway, "application/json", api::anthropic::ErrorBody("api_error", message),
                  RoutedHeaders());
    return Finish(routing::Outcome::kError, "error");
  }
  if (t.status == 200) {
    boost::json::error_code ec;
    auto v = boost::json::parse(t.body, ec);
    if (!ec && v.is_object()) {
      usage_ = api::ParseUsage(v.get_object());
      reply_ = api::ReplyContent(v.get_object());
    }
  }
  bool ok = upstream_status_ >= 200 && upstream_status_ < 400;
  // Anthropic's shape, the gateway's words for a 5xx (SanitizeUpstreamError, relay_raw_).
  if (upstream_status_ >= 400) SanitizeUpstreamError();
  writer_->Send(upstream_status_,
                upstream_content_type_.empty() ? "application/json" : upstream_content_type_,
                std::move(body_), RelayedHeaders());
  Finish(ok ? routing::Outcome::kSuccess : routing::Outcome::kError, ok ? "success" : "error");
}

}  // namespace kinference::gateway
