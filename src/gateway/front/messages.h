// The gateway's POST /v1/messages route (Anthropic Messages API): translates the request
// into the equivalent OpenAI chat completion (api/anthropic/messages_request.h), routes and proxies
// it exactly like POST /v1/chat/completions (same prefix rendering, router calls, retries, stats
// and usage accounting; exchange/proxy.h), and translates the response or stream back
// (api/anthropic/messages_response.h). Errors answer in Anthropic's shape
// {"type":"error","error":{"type","message"}} with Anthropic's status codes (529
// overloaded_error when no endpoint can take the request, the pool's queue is full or the
// upstream is overloaded; docs/anthropic.md "Errors"). When the endpoint picked is an Anthropic
// provider the client's own body and headers anthropic-version / anthropic-beta are passed through
// instead and the provider's bytes relayed unchanged (exchange/proxy.h, upstream/provider.h). A
// request with no OpenAI translation (images, documents, server tools) goes to Anthropic providers
// only when one serves the model; otherwise it is a 400.
//
// Thread-safety: runs on the gateway's io_context thread only.
#pragma once

#include <memory>

#include "gateway/context.h"
#include "http/server.h"

namespace kinference::gateway {

void HandleMessages(const std::shared_ptr<GatewayContext>& ctx, http::Request request,
                    std::shared_ptr<http::ResponseWriter> writer);

}  // namespace kinference::gateway
