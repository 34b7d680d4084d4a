// UpstreamCall: what one attempt of an Exchange (exchange/exchange.h) sends to the endpoint the
// router picked, per endpoint kind:
//  - a local vLLM endpoint: the request's upstream body (request.h, usage forced) over
//    plain HTTP;
//  - an OpenAI provider (provider.h): the same body with the provider's model name, its
//    bearer key, its target path, TLS and timeout;
//  - an Anthropic provider (api: anthropic): the chat request translated to a Messages
//    request (api/anthropic/upstream_request.h), or, for the /v1/messages front, the
//    client's own body with the provider's model (native passthrough); x-api-key and
//    anthropic-version headers.
// A request the client did not stream goes to OpenAI-shaped endpoints (local, OpenAI
// providers) as a stream when the Exchange asks for it (api/openai/stream_assembler.h), never to
// Anthropic providers.
// It also says which endpoints can take a request at all (an Anthropic provider has no
// /v1/completions; an untranslatable /v1/messages request goes to Anthropic providers
// only), for the policies' candidates and for the router's.
//
// Errors: returned as Status (kInvalidArgument for a request that does not translate for
// an Anthropic provider), never thrown.
//
// Thread-safety: pure functions of their arguments; callable from any thread.
#pragma once

#include <string>
#include <vector>

#include "api/anthropic/upstream_request.h"
#include "api/openai/request.h"
#include "common/status.h"
#include "gateway/config/config.h"
#include "gateway/context.h"
#include "http/client.h"

namespace kinference::gateway {

// Whether `ep` can take the request at all: no Anthropic provider for /v1/completions
// (the Messages API has no completions counterpart), only Anthropic providers for a
// /v1/messages request only they can take (`native` untranslatable).
bool SupportsRequest(const Endpoint& ep, api::ApiKind kind,
                     const api::anthropic::NativeRequest* native);

// Drops the endpoints that cannot take the request (SupportsRequest; policies never saw
// them either). When that leaves none on a first attempt: the 400 to answer.
Status DropUnsupportedEndpoints(const GatewayContext& ctx, api::ApiKind kind,
                                const api::anthropic::NativeRequest* native, bool first_attempt,
                                std::vector<routing::EndpointId>& candidates);

struct UpstreamCall {
  http::ClientRequest request;
  // An Anthropic provider: its responses and events are Messages ones
  // (api/anthropic/upstream_response.h), not OpenAI chunks.
  bool anthropic = false;
  // Native passthrough (the /v1/messages front to an Anthropic provider): the upstream's
  // bytes go to the client unchanged.
  bool passthrough = false;
  // The client did not ask for a stream but the call streams (stream_upstream on an
  // OpenAI-shaped endpoint): the chunks are to be reassembled (StreamAssembler).
  bool assembled = false;
};

// The call for one attempt of `req` on `ep`: POST `path` (a provider's own target path
// for it), `upstream_body` for local endpoints (UpstreamBody(req), kept by the caller),
// x-request-id `request_id`, `Authorization: Bearer` with the endpoint's key (a provider's,
// or a local pool's api_key_env/api_key_file for `vllm serve --api-key`), connect/header/idle
// timeouts from the config (a provider's timeout_s when set) in real seconds; an assembled call
// also gets that timeout for the whole call (http::ClientRequest::total_timeout_s), so that
// request_timeout_s bounds a non-streamed request from dispatch to the end of its stream, as it
// does one sent whole (whose head only comes with the whole answer). `native`: the client's own
// Anthropic request (ResponseCodec::native_anthropic), or nullptr. `stream_upstream`: `req` is not
// streamed but is to be streamed to an OpenAI-shaped endpoint (StreamsFaithfully checked by the
// caller); `upstream_body` is then StreamedUpstreamBody(req). Anthropic providers get
// the request as the client sent it.
Result<UpstreamCall> BuildUpstreamCall(const GatewayConfig& config, const Endpoint& ep,
                                       const api::ParsedRequest& req,
                                       const std::string& upstream_body, const std::string& path,
                                       const std::string& request_id,
                                       const api::anthropic::NativeRequest* native,
                                       bool stream_upstream = false);

}  // namespace kinference::gateway
