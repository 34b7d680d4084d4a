// The gateway's request path for POST /v1/chat/completions and /v1/completions: parse,
// build routing features, pick an endpoint, forward, relay the (streamed) response, and
// feed the router and the stats with what was observed. POST /v1/messages (Anthropic)
// shares this path through HandleParsed with a ResponseCodec (gateway/front/messages.h).
// proxy.cc is the entry (parse, features, policy request, classifier); each request is
// then an Exchange (exchange.h: attempts, retries, relay, finish), whose upstream calls
// are built per endpoint kind by upstream_call.h.
//
// Promises:
//  - every accepted request ends in exactly one response or, once streaming began, an
//    SSE error event `data: {"error":{...}}` followed by the end of the stream;
//  - an upstream failure before the first body byte (connect error, a 5xx status, or a
//    streamed 200 whose connection drops before any body data) is retried once on
//    another endpoint serving the model (a provider: its retries_before_first_byte
//    times, on itself when no other endpoint serves it). The client's 200 + SSE head is
//    held until the upstream's first body byte, since vLLM sends its head at once and
//    its first SSE data only at the first token;
//  - an upstream 401/403 (it rejected the gateway's own key: a provider's, or a local
//    vLLM's --api-key) is answered 502 in the front's shape without the upstream's body,
//    logged as an error and counted as a circuit-breaker failure; never retried;
//  - requests carry the tenant the front identified (ParsedRequest::tenant, front/tenants.h);
//    provider calls go over TLS with the provider's model name and bearer key and feed
//    its circuit breaker (upstream/provider.h);
//  - Anthropic providers (upstream/provider.h, api: anthropic): chat requests are translated to
//    Messages requests and their responses/streams back to OpenAI chunks before anything
//    else sees them (api/anthropic/upstream_*.h), so the rest of this path handles
//    every upstream as OpenAI; /v1/messages requests are passed through natively (the
//    client's body, the upstream's bytes; a whole 200 that is not a Messages object
//    becomes 502), still observed for TTFT, usage and outcome; /v1/completions never goes
//    to them (they are no candidates, policies included);
//  - streamed events are forwarded one by one as they arrive, never buffered whole;
//    upstream always streams usage (include_usage forced), and the usage-only chunk is
//    dropped when the client did not ask for it;
//  - a non-streamed request to an OpenAI-shaped upstream (local vLLM, OpenAI provider) is
//    sent as a stream (include_usage) unless the config says `upstream_streaming:
//    as_requested` or the request has fields a stream cannot answer (StreamsFaithfully,
//    stream_assembler.h); its chunks are observed like a stream's and the client gets
//    the one non-streamed object rebuilt from them (StreamAssembler; the /v1/messages
//    front translates it as any whole chat completion). An upstream error status is
//    relayed as for any non-streamed request (retried under the same rules, a 200 whose
//    connection drops before any body byte included); an error event, a malformed chunk
//    or an incomplete stream (StreamAssembler::Finish: no choice, an unfinished choice,
//    or neither [DONE] nor usage) is answered 502 in the front's error shape, never a
//    truncated 200; an upstream connection lost mid-response is answered 503, as for a
//    non-streamed upstream; request_timeout_s (a provider's timeout_s) bounds the whole
//    upstream call, dispatch to end of stream, which is then cancelled (vLLM aborts the
//    request) and answered 504, as when the upstream sent its answer whole.
//    Anthropic providers always get the request as the client sent it;
//  - a client disconnect cancels the upstream call and reports Outcome::kCancelled;
//  - routed responses carry x-kinference-endpoint, x-kinference-strategy,
//    x-kinference-predicted-ttft-ms (model-time milliseconds), x-kinference-matched-tokens
//    (the prefix-cache hit expected there, tokens) and x-kinference-prefix-index (precise:
//    from the endpoint's KV events, docs/kv-events.md; approximate otherwise);
//  - InferencePolicy (policy_gate.h) runs before the router: the router picks only among
//    the endpoints the request's policy snapshot allows (retries included), a rejection
//    is answered 403/503 in the API's shape, and every response after evaluation carries
//    x-kinference-decision (routed ones also x-kinference-model, the served model);
//  - a successful chat completion's reply (choice 0) is learned into its endpoint's
//    prefix index (Router::OnCompletionText): vLLM keeps the reply's KV, and the
//    conversation's next turn re-sends it.
// TTFT is measured from the request's arrival at the gateway to the first chunk with
// non-empty content, on the context's clock (model time), for streamed requests and for
// non-streamed ones streamed upstream (above). A response that arrives whole (upstream
// streaming off or refused, an Anthropic provider's non-streamed answer) gives no TTFT
// (vLLM reports no timings in the body); only usage and e2e latency.
//
// Thread-safety: runs on the gateway's io_context thread only.
#pragma once

#include <memory>
#include <string>

#include "api/anthropic/upstream_request.h"
#include "api/openai/request.h"
#include "api/sse.h"
#include "gateway/context.h"
#include "http/server.h"

namespace kinference::gateway {

// Header naming the strategy for one request (overrides the config default).
inline constexpr const char* kStrategyHeader = "x-kinference-strategy";
// The request id header (de facto standard, as Envoy and vLLM use it).
inline constexpr const char* kRequestIdHeader = "x-request-id";
// A client's x-request-id is kept when it is 1..128 characters of [A-Za-z0-9._:/+=-]
// (enough for UUIDs, ULIDs, base64 and tracing ids; nothing that could break a log line
// or a header); otherwise, or when absent, the gateway makes one: "kgw-" and 32 hex
// digits, a per-process random prefix and a counter. RequestIdFor is the one generator;
// the id travels as api::ParsedRequest::request_id from there on.
bool ValidRequestId(std::string_view id);
std::string RequestIdFor(GatewayContext& ctx, const http::Headers& headers);
// The access-log line of a request refused before routing (authentication, a body that
// does not parse, an unknown model or strategy): outcome "refused".
void LogRefused(const std::string& request_id, const std::string& tenant, const std::string& model,
                const Status& s);

void HandleCompletion(const std::shared_ptr<GatewayContext>& ctx, api::ApiKind kind,
                      http::Request request, std::shared_ptr<http::ResponseWriter> writer);

// Hook for a front that speaks another API (the Anthropic Messages codec): it rewrites
// what goes back to the client. Without one (the OpenAI routes) upstream bytes pass
// through unchanged. Runs on the gateway's thread; one codec per request.
class ResponseCodec {
 public:
  virtual ~ResponseCodec() = default;
  // An error the gateway answers itself (bad request, unknown model, no endpoint).
  virtual void SendError(http::ResponseWriter& w, const Status& status, http::Headers extra) = 0;
  // A whole upstream response (non-streamed, or an error status to a streamed request).
  virtual void SendBody(http::ResponseWriter& w, int upstream_status, std::string body,
                        http::Headers extra) = 0;
  // One upstream SSE event (usage-only and [DONE] included): the bytes to write.
  virtual std::string OnEvent(const api::SseEventView& event) = 0;
  // The upstream stream ended cleanly: the final bytes.
  virtual std::string OnEnd() = 0;
  // The upstream call failed after the response began: the final bytes.
  virtual std::string OnStreamError(const Status& status) = 0;
  // The gateway ended the request itself after the response began (AbortInFlight, e.g. a
  // drain timeout): the final bytes.
  virtual std::string OnAbort(const Status& status) { return OnStreamError(status); }
  // The stream it wrote ended in an error event (the request then counts as an error).
  virtual bool failed() const { return false; }
  // The gateway model that serves the request (a policy may pick an alternative); called
  // before any response is written.
  virtual void SetServedModel(const std::string& /*model*/) {}
  // The client's own Anthropic Messages request (the /v1/messages front), or nullptr.
  // When set and the endpoint is an Anthropic provider, the request is passed through
  // natively: the client's body (ParsedRequest::original, model rewritten) and these
  // headers go upstream and the upstream's response
  // bytes go to the client unchanged, bypassing the methods above (except SendError
  // for errors the gateway answers itself).
  virtual const api::anthropic::NativeRequest* native_anthropic() const { return nullptr; }
};

// The request path shared by every front: `request` is the OpenAI chat/completions
// request to route and send upstream to `upstream_path`; `headers` are the client's
// (for the strategy header); `arrival` is when the request reached the gateway.
// Errors and the response go through `codec` when set.
void HandleParsed(const std::shared_ptr<GatewayContext>& ctx, api::ParsedRequest request,
                  std::string upstream_path, const http::Headers& headers, Seconds arrival,
                  std::shared_ptr<http::ResponseWriter> writer,
                  std::shared_ptr<ResponseCodec> codec);

// Ends every request of `ctx` still in flight with `status` (graceful drain's grace
// period ran out): a started stream gets the SSE error event and ends, a request not yet
// answered gets the error response; upstream calls are cancelled. Returns how many.
size_t AbortInFlight(GatewayContext& ctx, const Status& status);

}  // namespace kinference::gateway
