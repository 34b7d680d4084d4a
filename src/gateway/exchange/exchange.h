// Exchange: one client request on the gateway's request path after parsing (HandleParsed,
// proxy.h), from the policy evaluation to the last byte written back. Per attempt it
// lets the router pick among the endpoints the policies allowed (retries exclude those
// already tried), sends the upstream call (upstream/upstream_call.h), relays the upstream's
// response (held SSE head, events one by one, whole bodies; Anthropic decoding or native
// passthrough; a non-streamed request streamed upstream is observed chunk by chunk and
// answered with the object rebuilt by a StreamAssembler), retries a failure before the first body
// byte, and finishes once: router feedback, stats, prefix learning. It keeps every promise listed
// in proxy.h.
//
// exchange.cc: attempts, policies, errors answered before a response, abort, finish;
// exchange_relay.cc: the upstream call's callbacks and the relay to the client.
//
// Thread-safety: runs on the gateway's io_context thread only. Held through shared_ptr
// by the upstream call's callbacks and by HandleParsed until the classifier ran;
// GatewayContext::in_flight and the client's close callback hold it weakly.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "accounting/limits.h"
#include "api/anthropic/upstream_response.h"
#include "api/openai/request.h"
#include "api/openai/response.h"
#include "api/openai/stream_assembler.h"
#include "api/retry_after.h"
#include "api/sse.h"
#include "gateway/context.h"
#include "gateway/exchange/policy_gate.h"
#include "gateway/exchange/proxy.h"
#include "http/client.h"
#include "http/server.h"

namespace kinference::gateway {

// Admission (admission_gate.h): an attempt goes only to healthy endpoints with room; when
// every healthy candidate is full the request waits in its pool's queue (Admitted() tries
// again, Refused() answers 429 with Retry-After); with no healthy candidate it is answered
// 503 with Retry-After (until the first ejection ends). A dispatched attempt holds a slot
// of its endpoint until it ends (retried or finished).
// Backpressure: when the client has more than backpressure.client_buffer_bytes queued the
// upstream read pauses until half of it drained; a client that stays stalled for
// client_stall_timeout_s is disconnected and the upstream call cancelled.
// Upstream errors: a 5xx body is logged (secrets redacted) and the client gets the
// gateway's own message with the status class and the request id (req_.request_id, the
// x-request-id the client gets back: one id in headers, bodies and logs); 4xx bodies are passed
// on with secrets redacted; no message names an upstream address. A relayed 429, 503 or 529
// keeps the upstream's Retry-After (bounded, api/retry_after.h); a 429 is relayed, never
// retried on another endpoint (a provider's limit is the gateway's account's, and the
// client's SDK waits as told). On /v1/messages overload (503, 529, overloaded_error, the
// gateway's own full queue or no healthy endpoint) is 529 overloaded_error.
// Cooldown (routing/router.h): an upstream 429, 503 or 529 with a Retry-After makes the
// router skip that endpoint until the wait has passed (this request's retry included);
// a request whose healthy endpoints are all cooling down is refused without calling one:
// 429 rate_limit_error (/v1/messages: 529 overloaded_error) with Retry-After until the
// first is back (a retry: 503, the last endpoint's error).
// Accounting (config `accounting`; ctx->accounting): once the router has picked an
// endpoint, and before the attempt is dispatched, a tenant with limits reserves the
// worst case the request can cost there (accounting/estimate.h: prompt and tool
// characters / 4 at that endpoint's input price, max_tokens or the model's context
// window at its output price) through the limiter (local, or Redis shared by the
// replicas; the reservation id is "<instance>/<router key>", "#<n>" added for a
// re-reservation: unique across replicas); admitted, the attempt goes to that endpoint
// (picked again if it has no room left meanwhile: a pick at another price reserves
// again, as a retry on an endpoint at another price does, the previous reservation given
// back first). Over a limit the request is answered 429 in the front's shape (OpenAI:
// code rate_limit_exceeded, or insufficient_quota for a spend budget; Anthropic:
// rate_limit_error); a request larger than a limit (it can never pass) is answered 400
// invalid_request_error. A refusal that passes within a minute carries Retry-After; any
// other carries `x-should-retry: false` and the time the limit resets
// (accounting/limit_headers.h), never a Retry-After an SDK would sleep through. Both
// carry the rate-limit headers; a fail_closed tenant whose limits cannot be checked
// (Redis unreachable) gets 503 with Retry-After. Admitted requests carry the rate-limit
// headers (OpenAI's names on the OpenAI fronts, Anthropic's on /v1/messages) on every
// response. When the request ends (success, upstream error, client gone, aborted) the
// reservation is settled with the real usage, and a request
// that had an attempt dispatched submits exactly one usage record (accounting/
// usage_record.h) to the ledger: the upstream's usage when it sent one (cached tokens
// from prompt_tokens_details / cache_read_input_tokens, cache writes from an Anthropic
// provider's cache_creation_input_tokens), else the estimate (prompt estimate, content
// chunks seen) marked usage_estimated; cost at the price of (pool or provider name,
// served model).
class Exchange : public InFlightRequest,
                 public AdmissionWaiter,
                 public std::enable_shared_from_this<Exchange> {
 public:
  // `codec`: null for the OpenAI fronts (upstream bytes pass through). `path`: the
  // upstream path to POST to. `arrival`: when the request reached the gateway.
  Exchange(std::shared_ptr<GatewayContext> ctx, std::shared_ptr<http::ResponseWriter> writer,
           api::ParsedRequest request, routing::RequestFeatures features, std::string strategy,
           std::string path, Seconds arrival, std::shared_ptr<ResponseCodec> codec,
           PolicyRequest policy);

  // The request's policy input; RunClassifier adds its tags before Start.
  PolicyRequest& policy_request() { return policy_; }

  // Registers in GatewayContext::in_flight, watches the client's close, runs the first
  // attempt.
  void Start();

  // AbortInFlight: ends the request with `s`; false if it had already finished.
  bool Abort(const Status& s) override;
  // AdmissionWaiter (admission_gate.h).
  void Admitted() override;
  void Refused(const Status& s, int retry_after_s) override;
  double Affinity(std::span<const std::string> with_room) const override;

 private:
  // --- exchange.cc ---
  void Attempt();
  // The body sent upstream: streamed_body_ when the client did not stream but the config
  // and the request let it be streamed upstream, else upstream_body_ (the other empty).
  void BuildBodies();
  // The request cannot be sent to the picked endpoint (it does not translate for an
  // Anthropic provider): a client error, counted as an error.
  void FailUnsendable(const Status& s);
  void OnClientClosed();
  // Evaluates the request's policy snapshot, once (first attempt): narrows the endpoints
  // the router may pick (allowed_), switches to an alternative model, or answers the
  // rejection (false).
  bool ApplyPolicies();
  // The gateway's own words for a failure the client sees, stamped with the request id
  // (the x-request-id it gets back): "<what>; request id <id>." The one place error
  // messages get the id; the upstream's own words and addresses go to the log only.
  std::string GatewayMessage(std::string_view what) const;
  // x-request-id always, x-kinference-decision once policies were evaluated (also on
  // errors after that).
  http::Headers DecisionHeaders() const;
  // No upstream response to relay: answer with an error in the API's shape.
  // `openai_body`: the OpenAI front's body when not api::OpenAiErrorBody(s) (rate limits).
  void FailBeforeResponse(const Status& s, const std::string& endpoint,
                          const char* outcome = "error", http::Headers extra = {},
                          std::string openai_body = {});
  // Waits in the admission queue for one of `candidates` (healthy, all full).
  void Queue(std::vector<routing::EndpointId> candidates);
  // The dispatched attempt ended: its endpoint's admission slot is free again.
  void ReleaseSlot();
  // Leaves the admission queue (client gone, aborted).
  void LeaveQueue();
  void Finish(routing::Outcome outcome, const char* label);
  // The request's one access-log line (common/logging.h event "access"): request id,
  // tenant, models requested and served, endpoint, strategy, predicted and observed TTFT,
  // tokens, the status the client got, outcome, duration. No header values (no keys).
  void LogAccess(const char* outcome, int status, const std::string& error);
  // The strategy label of the request's metrics and log line: the decision's, else the
  // one asked for, else the configured default.
  std::string StrategyLabel() const;
  // Whether a failure before the first byte on the current endpoint may be retried:
  // once for local endpoints, retries_before_first_byte times for a provider.
  bool CanRetry() const;
  http::Headers RoutedHeaders() const;
  // RoutedHeaders, plus the upstream's wait (upstream_retry_) when its 429, 503 or 529 is
  // what the client gets.
  http::Headers RelayedHeaders() const;

  // --- accounting (exchange.cc; see the class comment) ---
  // The worst case an attempt on `ep` reserves; nullopt when the tenant has no limits.
  std::optional<accounting::Amounts> WorstCaseOn(const Endpoint& ep);
  // Reserves `want` for the picked `endpoint` (giving back a reservation held at another
  // price); admitted, Attempt() runs again and goes there while it has room.
  void ReserveLimits(routing::EndpointId endpoint, accounting::Amounts want);
  void OnLimitDecision(accounting::Admission a, std::optional<accounting::Reservation> r);
  // Refused by a limit: 429, 400 when too large (or a fail_closed tenant's unreachable
  // limits: 503).
  void FailLimited(const accounting::Admission& a);
  // Once, when the request ends: settles the reservation, submits the usage record.
  // `status`: the HTTP status the client got (499: it went away first).
  void Account(const char* outcome, int status);

  // --- exchange_relay.cc ---
  void OnHeaders(int status, const http::Headers& headers);
  // Sends the held 200 + SSE head, with `first` (the first events' bytes) when given: the
  // upstream's first body byte (or its end) arrived.
  void StartClientStream(std::string first = {});
  void OnData(std::string_view data);
  // An Anthropic provider's event is first translated into the OpenAI chunks it means.
  void OnUpstreamEvent(const api::SseEventView& ev);
  // The bytes that end a started stream with `err`.
  // The final bytes of a stream that ends in `err`: an upstream failure, or `abort` (the
  // gateway ended the request itself, e.g. a drain timeout).
  std::string StreamErrorBytes(const Status& err, bool abort = false);
  // Observes one OpenAI event (TTFT, ITL, usage, reply text) and, on a started stream,
  // queues what the client gets for it in relay_.
  void OnEvent(const api::SseEventView& ev);
  // Queues `ev` for the client as FormatSse writes it (its bytes as received when they
  // are exactly that).
  void Relay(const api::SseEventView& ev);
  // Writes what OnEvent queued (one write per upstream read).
  void FlushRelay();
  void OnComplete(Status status);
  // Passive health: what this attempt's end says about its endpoint.
  void RecordEndpointResult(const Status& status);
  // A whole upstream error body about to be relayed: 5xx replaced by the gateway's own
  // message (logged redacted), 4xx redacted; a 4xx body that is no API error (empty, text,
  // a proxy's HTML or its own JSON) or over kMaxRedactedBytes replaced by the gateway's
  // message, status kept, in the API's shape (Anthropic's when passed through natively to
  // /v1/messages, else OpenAI's). Sets last_error_.
  void SanitizeUpstreamError();
  // Backpressure (see the class comment).
  void ApplyBackpressure();
  void ResumeUpstream();
  void OnClientStalled();
  // The upstream answered 401/403: it rejected the gateway's own credentials (a
  // provider's api key, a local vLLM's --api-key), which is no fault of the client.
  bool CredentialsRejected() const { return upstream_status_ == 401 || upstream_status_ == 403; }
  // Answers 502 in the front's error shape; the upstream's body is dropped (it may quote
  // part of the key) and the error is logged for the operator (never the key).
  void FailCredentialsRejected();
  // Native passthrough of a whole Anthropic response: relayed unchanged; usage is read
  // from its OpenAI translation (cache reads counted once). A 200 that is not a Messages
  // object is answered 502 in Anthropic's error shape, as on the translated path.
  void RelayWholeBody();
  // A streamed upstream answer to a non-streamed request could not be rebuilt (error
  // event, malformed chunk, incomplete stream: StreamAssembler::Finish): nothing was sent
  // yet, so 502 in the front's error shape, counted as an error.
  void FailAssembly(const Status& s);

  std::shared_ptr<GatewayContext> ctx_;
  std::shared_ptr<http::ResponseWriter> writer_;
  api::ParsedRequest req_;
  routing::RequestFeatures features_;
  // The router's in-flight key (features_.request_id of the first attempt; retries add
  // "-retryN"). Logs and messages name the request by req_.request_id (x-request-id).
  std::string router_key_;
  std::string requested_model_;  // the client's model (a policy may serve another)
  std::string strategy_;         // as requested; empty: the config default
  std::string path_;
  std::string upstream_body_;
  std::string streamed_body_;  // empty: non-streamed requests go upstream as they are
  Seconds arrival_;
  std::shared_ptr<ResponseCodec> codec_;  // null: OpenAI pass-through
  PolicyRequest policy_;                  // snapshot + request info, for the whole request
  bool evaluated_ = false;
  std::vector<routing::EndpointId> allowed_;  // what the policies left for the router
  policy::DecisionRecord record_;             // routed: updated at every pick

  routing::Decision decision_;
  std::vector<routing::EndpointId> tried_;
  // Why the request failed, for the client (after retries: the last endpoint's failure)
  // and the access log's `error` (set wherever a failure ends the request).
  std::string last_error_ = "no healthy endpoint";
  std::shared_ptr<http::Call> call_;
  int retries_ = 0;
  bool dispatched_ = false;
  bool retry_pending_ = false;
  bool response_started_ = false;
  bool stream_pending_ = false;  // upstream streamed 200 head seen, client head held back
  bool finished_ = false;
  int upstream_status_ = 0;
  std::string upstream_content_type_;
  // This attempt's upstream 429, 503 or 529 asked the client to wait: its Retry-After /
  // retry-after-ms, validated and bounded (api/retry_after.h), and x-should-retry when
  // "true" or "false". Forwarded only with that error relayed; an attempt retried
  // elsewhere drops them (the client's answer comes from the next endpoint).
  std::optional<api::RetryDelay> upstream_retry_;
  std::string upstream_should_retry_;
  std::string body_;
  api::SseParser parser_;
  std::string relay_;  // bytes for the client from the events of one upstream read
  // Anthropic provider on this attempt: its events become OpenAI chunks here; with
  // relay_raw_ (native passthrough) they are only observed and relayed event by event
  // (an error event replaced by the gateway's own, api::anthropic::ReplaceStreamError).
  std::optional<api::anthropic::MessagesStreamDecoder> decoder_;
  bool relay_raw_ = false;
  bool upstream_stream_error_ = false;  // an upstream error event relayed (as our own)
  // This attempt streams a non-streamed request (UpstreamCall::assembled): its chunks are
  // observed like a stream's (TTFT, ITL, usage) and rebuilt here into one response.
  std::optional<api::StreamAssembler> assembler_;
  bool assembled_data_ = false;  // a body byte of the assembled stream arrived
  std::optional<api::Usage> usage_;
  std::string reply_;  // choice 0's reply text (chat), for Router::OnCompletionText
  std::optional<Seconds> first_token_;
  Seconds last_token_ = 0;
  // Admission: the queue ticket while waiting, the endpoint whose slot an attempt holds.
  std::optional<admission::TicketId> ticket_;
  std::string slot_;
  int priority_ = 0;  // spec.requestPriority of the matching policy
  // Backpressure: the upstream read is paused; the stall timer runs meanwhile.
  bool paused_ = false;
  std::unique_ptr<boost::asio::steady_timer> stall_timer_;
  // Accounting (see the class comment).
  double arrival_unix_s_ = 0;              // wall-clock arrival (Unix seconds), the record's time
  accounting::Amounts estimate_;           // the last reservation asked for
  bool limits_held_ = false;               // estimate_ admitted (reserved, or a fail_open pass)
  routing::EndpointId reserved_endpoint_;  // the pick estimate_ was asked for
  int reservations_ = 0;                   // asked so far (the id's "#<n>")
  int64_t prompt_chars_ = -1;              // what the model reads as text (see above)
  std::optional<accounting::Admission> limit_admission_;  // admitted by limits: headers
  std::optional<accounting::Reservation> reservation_;    // to settle at the end
  bool reached_upstream_ = false;                         // an attempt was dispatched
  bool accounted_ = false;
  std::string provider_;        // the dispatched endpoint's pool or provider name
  int64_t content_chunks_ = 0;  // content chunks seen (the estimate without usage)
  int64_t cache_creation_ = 0;  // an Anthropic provider's whole body's cache writes
};

}  // namespace kinference::gateway
