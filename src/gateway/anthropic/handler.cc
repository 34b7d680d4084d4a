#include "gateway/anthropic/handler.h"

#include <boost/json/serialize.hpp>

#include "gateway/anthropic/messages_request.h"
#include "gateway/anthropic/messages_response.h"
#include "gateway/proxy.h"

namespace kinference::gateway::anthropic {
namespace {

void SendAnthropicError(http::ResponseWriter& w, const Status& s, http::Headers extra = {}) {
  w.Send(ErrorHttpStatus(s.code()), "application/json", ErrorBody(s), std::move(extra));
}

class MessagesCodec final : public ResponseCodec {
 public:
  explicit MessagesCodec(ResponseContext ctx) : ctx_(ctx), stream_(std::move(ctx)) {}

  void SendError(http::ResponseWriter& w, const Status& status, http::Headers extra) override {
    SendAnthropicError(w, status, std::move(extra));
  }
  void SendBody(http::ResponseWriter& w, int upstream_status, std::string body,
                http::Headers extra) override {
    TranslatedResponse r = TranslateResponse(upstream_status, body, ctx_);
    w.Send(r.status, "application/json", std::move(r.body), std::move(extra));
  }
  std::string OnEvent(const http::SseEvent& event) override { return stream_.OnData(event.data); }
  std::string OnEnd() override { return stream_.OnEnd(); }
  std::string OnStreamError(const Status& status) override { return stream_.OnError(status); }
  bool failed() const override { return stream_.failed(); }

 private:
  ResponseContext ctx_;
  StreamTranslator stream_;
};

}  // namespace

void HandleMessages(const std::shared_ptr<GatewayContext>& ctx, http::Request request,
                    std::shared_ptr<http::ResponseWriter> writer) {
  Seconds arrival = ctx->clock.Now();
  auto tenant = Identify(ctx->config.tenants, request.headers, ApiFront::kAnthropic);
  if (!tenant.ok()) return SendAnthropicError(*writer, tenant.status());
  auto translated = TranslateRequest(request.body);
  if (!translated.ok()) return SendAnthropicError(*writer, translated.status());
  // The equivalent chat completion goes through the OpenAI parser, so routing features
  // are rendered exactly as for POST /v1/chat/completions.
  auto parsed =
      ParseRequest(ApiKind::kChatCompletions, boost::json::serialize(translated->openai_body));
  if (!parsed.ok()) return SendAnthropicError(*writer, parsed.status());
  parsed->tenant = std::move(*tenant);
  auto codec = std::make_shared<MessagesCodec>(
      ResponseContext{translated->model, std::move(translated->stop_sequences)});
  HandleParsed(ctx, std::move(*parsed), "/v1/chat/completions", request.headers, arrival,
               std::move(writer), std::move(codec));
}

}  // namespace kinference::gateway::anthropic
