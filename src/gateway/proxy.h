// The gateway's request path for POST /v1/chat/completions and /v1/completions: parse,
// build routing features, pick an endpoint, forward, relay the (streamed) response, and
// feed the router and the stats with what was observed.
//
// Promises:
//  - every accepted request ends in exactly one response or, once streaming began, an
//    SSE error event `data: {"error":{...}}` followed by the end of the stream;
//  - an upstream failure before the first byte (connect error, or a 5xx status) is
//    retried once on another endpoint serving the model;
//  - streamed events are forwarded one by one as they arrive, never buffered whole;
//    upstream always streams usage (include_usage forced), and the usage-only chunk is
//    dropped when the client did not ask for it;
//  - a client disconnect cancels the upstream call and reports Outcome::kCancelled;
//  - routed responses carry x-kinference-endpoint, x-kinference-strategy and
//    x-kinference-predicted-ttft-ms (model-time milliseconds).
// TTFT is measured from the request's arrival at the gateway to the first chunk with
// non-empty content, on the context's clock (model time). Non-streamed responses give
// no TTFT (vLLM reports no timings in the body); only usage and e2e latency.
//
// Thread-safety: runs on the gateway's io_context thread only.
#pragma once

#include <memory>

#include "gateway/context.h"
#include "gateway/request.h"
#include "http/server.h"

namespace kinference::gateway {

// Header naming the strategy for one request (overrides the config default).
inline constexpr const char* kStrategyHeader = "x-kinference-strategy";

void HandleCompletion(const std::shared_ptr<GatewayContext>& ctx, ApiKind kind,
                      http::Request request, std::shared_ptr<http::ResponseWriter> writer);

}  // namespace kinference::gateway
