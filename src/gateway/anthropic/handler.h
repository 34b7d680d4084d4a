// The gateway's POST /v1/messages route (Anthropic Messages API): translates the request
// into the equivalent OpenAI chat completion (messages_request.h), routes and proxies it
// exactly like POST /v1/chat/completions (same prefix rendering, router calls, retries,
// stats and usage accounting; proxy.h), and translates the response or stream back
// (messages_response.h). Errors answer in Anthropic's shape
// {"type":"error","error":{"type","message"}} with Anthropic's status codes (529 when
// no endpoint can take the request).
//
// Thread-safety: runs on the gateway's io_context thread only.
#pragma once

#include <memory>

#include "gateway/context.h"
#include "http/server.h"

namespace kinference::gateway::anthropic {

void HandleMessages(const std::shared_ptr<GatewayContext>& ctx, http::Request request,
                    std::shared_ptr<http::ResponseWriter> writer);

}  // namespace kinference::gateway::anthropic
