#include "gateway/exchange/proxy.h"

#include <fmt/format.h>

#include "api/openai/validate.h"
#include "gateway/exchange/exchange.h"
#include "gateway/exchange/policy_gate.h"

namespace kinference::gateway {

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

void HandleCompletion(const std::shared_ptr<GatewayContext>& ctx, api::ApiKind kind,
                      http::Request request, std::shared_ptr<http::ResponseWriter> writer) {
  Seconds arrival = ctx->clock.Now();
  auto tenant = Identify(ctx->config.tenants, request.headers, ApiFront::kOpenAi);
  if (!tenant.ok()) return http::SendOpenAiError(*writer, tenant.status());
  if (Status ct = api::CheckJsonContentType(request.headers.Find("content-type")); !ct.ok())
    return http::SendOpenAiError(*writer, ct);
  auto parsed = api::ParseRequest(kind, request.body);
  if (!parsed.ok()) return http::SendOpenAiError(*writer, parsed.status());
  if (Status v = api::ValidateOpenAiFields(kind, parsed->body); !v.ok())
    return http::SendOpenAiError(*writer, v);
  parsed->tenant = std::move(*tenant);
  HandleParsed(ctx, std::move(*parsed), std::move(request.path), request.headers, arrival,
               std::move(writer), nullptr);
}

void HandleParsed(const std::shared_ptr<GatewayContext>& ctx, api::ParsedRequest parsed,
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
  // Kubernetes mode: InferenceTenant spec.access.models.
  if (!ctx->TenantMayUse(parsed.tenant, parsed.model)) {
    Status s(ErrorCode::kPermissionDenied,
             "Tenant '" + parsed.tenant + "' may not use the model `" + parsed.model + "`.");
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
  ctx->AddEngineBlockKeys(parsed, features);
  // /v1/messages: taggers scan the client's original Anthropic body, not the translation.
  PolicyRequest policy = BeginPolicyRequest(*ctx, parsed, headers);
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
