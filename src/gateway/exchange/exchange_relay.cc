// The response half of Exchange (exchange.h): the upstream call's callbacks (head, body
// bytes, completion with its retry before the first body byte) and what they relay to the
// client: the held SSE head, events one by one (OpenAI chunks, a codec's rewrite, or an
// Anthropic provider's decoded or passed-through events), whole bodies (a non-streamed
// request's stream rebuilt by the StreamAssembler included), error ends.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <ctime>
#include <utility>

#include "api/anthropic/messages_request.h"
#include "api/openai/error.h"
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

}  // namespace

void Exchange::OnHeaders(int status, const http::Headers& headers) {
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
  // A streamed call for a non-streamed request answered 200 without a stream (an
  // OpenAI-compatible upstream that ignores `stream`): its whole body is the answer.
  if (assembler_ && status == 200 && !upstream_content_type_.starts_with("text/event-stream")) {
    assembler_.reset();
  }
}

void Exchange::StartClientStream() {
  stream_pending_ = false;
  response_started_ = true;
  writer_->StartStream(200, "text/event-stream", RoutedHeaders());
}

void Exchange::OnData(std::string_view data) {
  if (finished_ || retry_pending_) return;
  if (stream_pending_ && !data.empty()) StartClientStream();
  if (assembler_ && upstream_status_ == 200) {  // observed here, answered whole at the end
    if (!data.empty()) assembled_data_ = true;
    parser_.Feed(data, [this](const api::SseEvent& ev) { OnEvent(ev); });
    return;
  }
  if (!response_started_) {
    body_.append(data);
    return;
  }
  if (relay_raw_) writer_->Write(std::string(data));  // passthrough: the bytes as they came
  parser_.Feed(data, [this](const api::SseEvent& ev) { OnUpstreamEvent(ev); });
}

void Exchange::OnUpstreamEvent(const api::SseEvent& ev) {
  if (!decoder_) return OnEvent(ev);
  for (const auto& out : decoder_->OnEvent(ev)) OnEvent(out);
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

void Exchange::OnEvent(const api::SseEvent& ev) {
  if (finished_) return;
  api::ChunkInfo info = api::InspectChunk(ev.data);
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
  if (assembler_) return assembler_->Add(ev.data);
  if (relay_raw_) return;  // observed only: OnData relayed the upstream bytes
  if (codec_) {
    if (std::string out = codec_->OnEvent(ev); !out.empty()) writer_->Write(std::move(out));
    return;
  }
  if (info.usage_only && !req_.client_wants_usage) return;
  writer_->Write(api::FormatSse(ev.data, ev.event));
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
  if ((retry_pending_ || connect_failure || dropped_before_body) && CanRetry()) {
    last_error_ = retry_pending_
                      ? fmt::format("upstream {} answered {}", decision_.endpoint, upstream_status_)
                      : fmt::format("upstream {}: {}", decision_.endpoint, status.message());
    stream_pending_ = false;
    spdlog::warn("request {}: {}; retrying on another endpoint", base_request_id_, last_error_);
    ctx_->router.OnFinished(features_.request_id, {}, routing::Outcome::kError, ctx_->clock.Now());
    ctx_->stats.RecordRequest(decision_.endpoint, decision_.strategy, "retried");
    ctx_->OnUpstreamResult(decision_.endpoint, false);
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

void Exchange::FailCredentialsRejected() {
  std::string message = fmt::format("upstream {} rejected the gateway's credentials ({})",
                                    decision_.endpoint, upstream_status_);
  spdlog::error("request {}: {}; check the api key the gateway sends it", base_request_id_,
                message);
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
  std::string message = fmt::format("upstream {}: {}", decision_.endpoint, s.message());
  spdlog::warn("request {}: {}", base_request_id_, message);
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
    spdlog::warn("request {}: {}", base_request_id_, message);
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
  writer_->Send(upstream_status_,
                upstream_content_type_.empty() ? "application/json" : upstream_content_type_,
                std::move(body_), RoutedHeaders());
  Finish(ok ? routing::Outcome::kSuccess : routing::Outcome::kError, ok ? "success" : "error");
}

}  // namespace kinference::gateway
