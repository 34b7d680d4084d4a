#include "gateway/upstream/upstream_call.h"

#include <algorithm>
#include <utility>

#include "api/openai/stream_assembler.h"
#include "gateway/upstream/provider.h"

namespace kinference::gateway {
namespace {

// Connect timeout (real seconds) for upstream calls: loopback and in-cluster connects
// take well under a second; a longer wait means the endpoint is down.
constexpr double kConnectTimeoutS = 3.0;

// The call to an Anthropic provider: the client's own body for the /v1/messages front
// (native passthrough), else the chat request translated (api/anthropic/upstream_request.h).
// Headers per Anthropic API reference "Overview": x-api-key, anthropic-version.
Status BuildAnthropicCall(const ProviderConfig& p, const std::string& key,
                          const api::ParsedRequest& req,
                          const api::anthropic::NativeRequest* native, UpstreamCall& out) {
  http::ClientRequest& call = out.request;
  Result<std::string> body =
      native ? api::anthropic::NativeRequestBody(req.original, p.model)
             : api::anthropic::BuildMessagesRequest(req.body, {p.model, p.default_max_tokens});
  if (!body.ok()) return body.status();
  call.body = std::move(*body);
  call.headers.Add("x-api-key", key);
  call.headers.Add("anthropic-version", native && !native->anthropic_version.empty()
                                            ? native->anthropic_version
                                            : p.anthropic_version);
  if (native && !native->anthropic_beta.empty())
    call.headers.Add("anthropic-beta", native->anthropic_beta);
  out.passthrough = native != nullptr;
  out.anthropic = true;
  return Status::Ok();
}

}  // namespace

bool SupportsRequest(const Endpoint& ep, api::ApiKind kind,
                     const api::anthropic::NativeRequest* native) {
  const bool native_only = native && !native->untranslatable.ok();
  const bool anthropic = ep.provider && ep.provider->api == ProviderApi::kAnthropic;
  if (native_only) return anthropic;
  return !(kind == api::ApiKind::kCompletions && anthropic);
}

Status DropUnsupportedEndpoints(const GatewayContext& ctx, api::ApiKind kind,
                                const api::anthropic::NativeRequest* native, bool first_attempt,
                                std::vector<routing::EndpointId>& candidates) {
  const bool native_only = native && !native->untranslatable.ok();
  if (kind != api::ApiKind::kCompletions && !native_only) return Status::Ok();
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

Result<UpstreamCall> BuildUpstreamCall(const GatewayConfig& config, const Endpoint& ep,
                                       const api::ParsedRequest& req,
                                       const std::string& upstream_body, const std::string& path,
                                       const std::string& request_id,
                                       const api::anthropic::NativeRequest* native,
                                       bool stream_upstream) {
  UpstreamCall out;
  http::ClientRequest& call = out.request;
  call.method = "POST";
  call.host = ep.address.host;
  call.port = ep.address.port;
  call.target = path;
  call.body = upstream_body;
  call.headers.Add("x-request-id", request_id);
  out.assembled = stream_upstream && !req.stream;
  double timeout_model_s = config.request_timeout_s;
  if (const ProviderConfig* p = ep.provider.get()) {
    call.target = ProviderTarget(*p, path);
    if (p->api == ProviderApi::kAnthropic) {
      out.assembled = false;  // its responses are translated whole; sent as requested
      if (Status s = BuildAnthropicCall(*p, ep.api_key, req, native, out); !s.ok()) return s;
    } else {
      // The provider's model name; the body is serialised again, not copied.
      call.body = out.assembled ? api::StreamedUpstreamBody(req, p->model)
                                : api::UpstreamBody(req, p->model);
      call.headers.Add("authorization", "Bearer " + ep.api_key);
    }
    call.tls = p->tls;
    call.ca_file = p->ca_file;
    call.ca_pem = p->ca_pem;
    if (p->timeout_s > 0) timeout_model_s = p->timeout_s;
  } else if (!ep.api_key.empty()) {
    call.headers.Add("authorization", "Bearer " + ep.api_key);  // vllm serve --api-key
  }
  const double timeout_s = config.RealSeconds(timeout_model_s);
  call.connect_timeout_s = std::min(kConnectTimeoutS, timeout_s);
  call.header_timeout_s = timeout_s;
  call.idle_timeout_s = timeout_s;
  // A non-streamed request bounds its whole upstream call, as when vLLM sent its head only
  // with the whole answer (the header timeout did it): streamed upstream, the head comes
  // at once and only the idle timeout between chunks would apply.
  if (out.assembled) call.total_timeout_s = timeout_s;
  return out;
}

}  // namespace kinference::gateway
