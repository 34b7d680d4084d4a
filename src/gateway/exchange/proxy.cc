#include "gateway/exchange/proxy.h"

#include <fmt/format.h>

#include "api/openai/error.h"
#include "api/openai/validate.h"
#include "common/logging.h"
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

bool ValidRequestId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '/' || c == '+' || c == '=' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void LogRefused(const std::string& request_id, const std::string& tenant, const std::string& model,
                const Status& s) {
  LogEvent(LogLevel::kInfo, "access", "request",
           {{"request_id", request_id},
            {"tenant", tenant.empty() ? std::string("none") : tenant},
            {"model_requested", model},
            {"endpoint", std::string("none")},
            {"status", int64_t{HttpStatusFor(s.code())}},
            {"outcome", std::string("refused")},
            {"error", s.message()}});
}

std::string RequestIdFor(GatewayContext& ctx, const http::Headers& headers) {
  std::string_view given = headers.Find(kRequestIdHeader);
  if (ValidRequestId(given)) return std::string(given);
  return fmt::format("kgw-{:016x}{:016x}", ctx.request_id_prefix, ctx.next_request_id++);
}

void HandleCompletion(const std::shared_ptr<GatewayContext>& ctx, api::ApiKind kind,
                      http::Request request, std::shared_ptr<http::ResponseWriter> writer) {
  Seconds arrival = ctx->clock.Now();
  std::string request_id = RequestIdFor(*ctx, request.headers);
  auto refuse = [&](const std::string& tenant, const Status& s) {
    LogRefused(request_id, tenant, "", s);
    http::Headers id;
    id.Add(kRequestIdHeader, request_id);
    writer->Send(HttpStatusFor(s.code()), "application/json", api::OpenAiErrorBody(s),
                 std::move(id));
  };
  auto tenant = Identify(ctx->config.tenants, request.headers, ApiFront::kOpenAi);
  if (!tenant.ok()) return refuse("", tenant.status());
  if (Status ct = api::CheckJsonContentType(request.headers.Find("content-type")); !ct.ok())
    return refuse(*tenant, ct);
  auto parsed = api::ParseRequest(kind, request.body);
  if (!parsed.ok()) return refuse(*tenant, parsed.status());
  if (Status v = api::ValidateOpenAiFields(kind, parsed->body); !v.ok()) return refuse(*tenant, v);
  parsed->tenant = std::move(*tenant);
  parsed->request_id = std::move(request_id);
  HandleParsed(ctx, std::move(*parsed), std::move(request.path), request.headers, arrival,
               std::move(writer), nullptr);
}

void HandleParsed(const std::shared_ptr<GatewayContext>& ctx, api::ParsedRequest parsed,
                  std::string upstream_path, const http::Headers& headers, Seconds arrival,
                  std::shared_ptr<http::ResponseWriter> writer,
                  std::shared_ptr<ResponseCodec> codec) {
  if (parsed.request_id.empty()) parsed.request_id = RequestIdFor(*ctx, headers);
  auto fail = [&](const Status& s) {
    LogRefused(parsed.request_id, parsed.tenant, parsed.model, s);
    http::Headers id;
    id.Add(kRequestIdHeader, parsed.request_id);
    if (codec) return codec->SendError(*writer, s, id);
    writer->Send(HttpStatusFor(s.code()), "application/json", api::OpenAiErrorBody(s), id);
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
  // The router's key for in-flight bookkeeping: unique even when clients reuse an id.
  features.request_id = fmt::format("{}#{}", parsed.request_id, ctx->next_request_id++);
  features.model = parsed.model;
  features.block_hashes = routing::ChainedBlockHashes(parsed.prompt_text, ctx->config.block_chars,
                                                      ctx->prefix_hash_key);
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
