#include "gateway/front/messages.h"

#include <boost/json/serialize.hpp>

#include "api/anthropic/messages_request.h"
#include "api/anthropic/messages_response.h"
#include "api/json_body.h"
#include "gateway/exchange/proxy.h"

namespace kinference::gateway {

using namespace api::anthropic;  // NOLINT: this file is the Anthropic front

namespace {

void SendAnthropicError(http::ResponseWriter& w, const Status& s, http::Headers extra = {}) {
  w.Send(ErrorHttpStatus(s.code()), "application/json", ErrorBody(s), std::move(extra));
}

class MessagesCodec final : public ResponseCodec {
 public:
  MessagesCodec(ResponseContext ctx, NativeRequest native)
      : ctx_(ctx), stream_(std::move(ctx)), native_(std::move(native)) {}

  void SendError(http::ResponseWriter& w, const Status& status, http::Headers extra) override {
    SendAnthropicError(w, status, std::move(extra));
  }
  void SendBody(http::ResponseWriter& w, int upstream_status, std::string body,
                http::Headers extra) override {
    TranslatedResponse r = TranslateResponse(upstream_status, body, ctx_);
    w.Send(r.status, "application/json", std::move(r.body), std::move(extra));
  }
  std::string OnEvent(const api::SseEvent& event) override { return stream_.OnData(event.data); }
  std::string OnEnd() override { return stream_.OnEnd(); }
  std::string OnStreamError(const Status& status) override { return stream_.OnError(status); }
  std::string OnAbort(const Status& status) override {
    return stream_.OnError(status, /*upstream_failure=*/false);
  }
  bool failed() const override { return stream_.failed(); }
  void SetServedModel(const std::string& model) override {
    ctx_.model = model;
    stream_.set_model(model);
  }
  const NativeRequest* native_anthropic() const override { return &native_; }

 private:
  ResponseContext ctx_;
  StreamTranslator stream_;
  NativeRequest native_;  // for Anthropic providers: passed through as is
};

bool AnthropicProviderServes(const GatewayContext& ctx, const std::string& model) {
  for (const auto& p : ctx.config.providers)
    if (p.api == ProviderApi::kAnthropic && p.serves_model == model) return true;
  return false;
}

// Routing input for a request with no OpenAI translation (it goes to Anthropic providers
// only, natively): model, stream, max_tokens and the text of its messages, rendered by
// the chat renderer (which reads the `text` of content blocks).
Result<api::ParsedRequest> NativeOnlyRequest(std::string_view body) {
  boost::system::error_code ec;
  boost::json::value v = api::ParseJsonBody(body, ec);
  const auto* o = ec ? nullptr : v.if_object();
  if (!o) return Status(ErrorCode::kInvalidArgument, "Request body must be a JSON object");
  boost::json::object routing;
  for (const char* key : {"model", "stream", "max_tokens", "messages"}) {
    if (const auto* x = o->if_contains(key)) routing[key] = *x;
  }
  return api::ParseRequest(api::ApiKind::kChatCompletions, boost::json::serialize(routing));
}

}  // namespace

void HandleMessages(const std::shared_ptr<GatewayContext>& ctx, http::Request request,
                    std::shared_ptr<http::ResponseWriter> writer) {
  Seconds arrival = ctx->clock.Now();
  auto tenant = Identify(ctx->config.tenants, request.headers, ApiFront::kAnthropic);
  if (!tenant.ok()) return SendAnthropicError(*writer, tenant.status());
  NativeRequest native{{},
                       std::string(request.headers.Find("anthropic-version")),
                       std::string(request.headers.Find("anthropic-beta")),
                       Status::Ok()};
  auto translated = TranslateRequest(request.body);
  // The equivalent chat completion goes through the OpenAI parser, so routing features
  // are rendered exactly as for POST /v1/chat/completions. Untranslatable requests
  // (images, documents, server tools...) are fine for an Anthropic provider.
  Result<api::ParsedRequest> parsed =
      translated.ok() ? api::ParseRequest(api::ApiKind::kChatCompletions,
                                          boost::json::serialize(translated->openai_body))
                      : NativeOnlyRequest(request.body);
  ResponseContext response;
  if (translated.ok()) {
    response = ResponseContext{translated->model, std::move(translated->stop_sequences)};
  } else {
    if (!parsed.ok() || !AnthropicProviderServes(*ctx, parsed->model))
      return SendAnthropicError(*writer, translated.status());
    native.untranslatable = translated.status();
    response.model = parsed->model;
  }
  if (!parsed.ok()) return SendAnthropicError(*writer, parsed.status());
  parsed->tenant = std::move(*tenant);
  native.body = std::move(request.body);
  auto codec = std::make_shared<MessagesCodec>(std::move(response), std::move(native));
  HandleParsed(ctx, std::move(*parsed), "/v1/chat/completions", request.headers, arrival,
               std::move(writer), std::move(codec));
}

}  // namespace kinference::gateway
