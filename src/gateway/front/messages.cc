#include "gateway/front/messages.h"

#include "api/anthropic/messages_request.h"
#include "api/anthropic/messages_response.h"
#include "api/openai/validate.h"
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
  std::string OnEvent(const api::SseEventView& event) override {
    return stream_.OnData(event.data);
  }
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
  for (const auto& ep : ctx.endpoints)
    if (ep.provider && ep.provider->api == ProviderApi::kAnthropic && ep.info.model == model)
      return true;
  return false;
}

}  // namespace

void HandleMessages(const std::shared_ptr<GatewayContext>& ctx, http::Request request,
                    std::shared_ptr<http::ResponseWriter> writer) {
  Seconds arrival = ctx->clock.Now();
  std::string request_id = RequestIdFor(*ctx, request.headers);
  auto refuse = [&](const std::string& tenant, const std::string& model, const Status& s) {
    LogRefused(request_id, tenant, model, s);
    http::Headers id;
    id.Add(kRequestIdHeader, request_id);
    SendAnthropicError(*writer, s, std::move(id));
  };
  auto tenant = Identify(ctx->config.tenants, request.headers, ApiFront::kAnthropic);
  if (!tenant.ok()) return refuse("", "", tenant.status());
  if (Status ct = api::CheckJsonContentType(request.headers.Find("content-type")); !ct.ok())
    return refuse(*tenant, "", ct);
  // The body's one parse: the equivalent chat completion to route, and the client's own
  // body (taggers scan it; an Anthropic provider gets it natively).
  auto parsed = ParseMessages(request.body);
  if (!parsed.ok()) return refuse(*tenant, "", parsed.status());
  api::ParsedRequest& req = parsed->request;
  // Untranslatable requests (images, documents, server tools...) are fine for an
  // Anthropic provider only.
  if (!parsed->untranslatable.ok() && !AnthropicProviderServes(*ctx, req.model))
    return refuse(*tenant, req.model, parsed->untranslatable);
  req.request_id = std::move(request_id);
  NativeRequest native{std::string(request.headers.Find("anthropic-version")),
                       std::string(request.headers.Find("anthropic-beta")), parsed->untranslatable};
  req.tenant = std::move(*tenant);
  auto codec = std::make_shared<MessagesCodec>(
      ResponseContext{req.model, std::move(parsed->stop_sequences)}, std::move(native));
  HandleParsed(ctx, std::move(req), "/v1/chat/completions", request.headers, arrival,
               std::move(writer), std::move(codec));
}

}  // namespace kinference::gateway
