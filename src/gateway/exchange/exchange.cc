#include "gateway/exchange/exchange.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <ctime>
#include <utility>

#include "accounting/estimate.h"
#include "accounting/limit_headers.h"
#include "accounting/usage_record.h"
#include "api/anthropic/messages_request.h"
#include "api/openai/error.h"
#include "common/logging.h"
#include "common/redact.h"
#include "gateway/upstream/upstream_call.h"

namespace kinference::gateway {
namespace {

routing::Usage ToRouting(const api::Usage& u) {
  return routing::Usage{.prompt_tokens = u.prompt_tokens,
                        .cached_tokens = u.cached_tokens,
                        .completion_tokens = u.completion_tokens};
}

double NowUnixS() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// OpenAI's body for a limit (platform.openai.com/docs/guides/error-codes): 429 with code
// rate_limit_exceeded and type requests or tokens, or insufficient_quota for a spend
// budget (type and code alike, as OpenAI answers an exhausted quota); a request larger
// than the limit, which no wait lets pass, is 400 invalid_request_error with code
// request_too_large, as OpenAI answers a request over the context window
// (context_length_exceeded) rather than a 429 that every client retries.
std::string OpenAiLimitBody(const accounting::Admission& a, const std::string& message) {
  const accounting::LimitKind kind = a.exceeded.value_or(accounting::LimitKind::kRequests);
  const bool spend = accounting::IsSpend(kind);
  const bool tokens =
      kind == accounting::LimitKind::kInputTokens || kind == accounting::LimitKind::kOutputTokens;
  return boost::json::serialize(boost::json::object{
      {"error", boost::json::object{{"message", message},
                                    {"type", a.too_large ? "invalid_request_error"
                                             : spend     ? "insufficient_quota"
                                             : tokens    ? "tokens"
                                                         : "requests"},
                                    {"param", nullptr},
                                    {"code", a.too_large ? "request_too_large"
                                             : spend     ? "insufficient_quota"
                                                         : "rate_limit_exceeded"}}}});
}

// The characters of what the model reads as text (accounting/estimate.h): the messages'
// rendering (the system prompt is a message) and the tool definitions.
int64_t PromptChars(const api::ParsedRequest& r) {
  int64_t n = static_cast<int64_t>(r.prompt_text.size());
  for (const char* key : {"tools", "functions"}) {
    if (const auto* v = r.body.if_contains(key); v && !v->is_null())
      n += static_cast<int64_t>(boost::json::serialize(*v).size());
  }
  return n;
}

}  // namespace

Exchange::Exchange(std::shared_ptr<GatewayContext> ctx,
                   std::shared_ptr<http::ResponseWriter> writer, api::ParsedRequest request,
                   routing::RequestFeatures features, std::string strategy, std::string path,
                   Seconds arrival, std::shared_ptr<ResponseCodec> codec, PolicyRequest policy)
    : ctx_(std::move(ctx)),
      writer_(std::move(writer)),
      req_(std::move(request)),
      features_(std::move(features)),
      router_key_(features_.request_id),
      requested_model_(req_.model),
      strategy_(std::move(strategy)),
      path_(std::move(path)),
      arrival_(arrival),
      codec_(std::move(codec)),
      policy_(std::move(policy)),
      arrival_unix_s_(NowUnixS()) {
  BuildBodies();
}

void Exchange::BuildBodies() {
  upstream_body_.clear();
  streamed_body_.clear();
  if (!req_.stream && ctx_->config.upstream_streaming == UpstreamStreaming::kAlways &&
      api::StreamsFaithfully(req_.kind, req_.body)) {
    streamed_body_ = api::StreamedUpstreamBody(req_);  // every attempt sends this one
  } else {
    upstream_body_ = api::UpstreamBody(req_);
  }
}

void Exchange::Start() {
  std::weak_ptr<Exchange> weak = weak_from_this();
  std::erase_if(ctx_->in_flight, [](const auto& w) { return w.expired(); });
  ctx_->in_flight.push_back(weak);
  writer_->OnClose([weak] {
    if (auto self = weak.lock()) self->OnClientClosed();
  });
  Attempt();
}

std::optional<accounting::Amounts> Exchange::WorstCaseOn(const Endpoint& ep) {
  const accounting::TenantLimits* limits = ctx_->TenantLimitsFor(req_.tenant);
  if (!limits) return std::nullopt;
  if (prompt_chars_ < 0) prompt_chars_ = PromptChars(req_);
  return accounting::ReservationFor(prompt_chars_, req_.max_tokens, req_.model,
                                    ctx_->accounting->config().estimate,
                                    ctx_->accounting->PriceFor(ep.info.pool, req_.model), *limits);
}

void Exchange::ReserveLimits(routing::EndpointId endpoint, accounting::Amounts want) {
  const accounting::TenantLimits* limits = ctx_->TenantLimitsFor(req_.tenant);
  const double now = NowUnixS();
  if (reservation_) {  // held at another price (a retry elsewhere): given back first
    ctx_->accounting->limiter().Settle(*reservation_, accounting::Amounts{}, now);
    reservation_.reset();
  }
  limits_held_ = false;
  estimate_ = want;
  reserved_endpoint_ = std::move(endpoint);
  // Unique across replicas sharing Redis: this process's instance and its router key.
  std::string id = ctx_->instance + "/" + router_key_;
  if (reservations_++ > 0) id += "#" + std::to_string(reservations_);
  auto self = shared_from_this();
  ctx_->accounting->limiter().Reserve(
      req_.tenant, *limits, estimate_, id, now,
      [self](accounting::Admission a, std::optional<accounting::Reservation> r) {
        self->OnLimitDecision(std::move(a), std::move(r));
      });
}

void Exchange::OnLimitDecision(accounting::Admission a, std::optional<accounting::Reservation> r) {
  if (finished_) {  // the client left while the limits were checked: give it back
    if (r) ctx_->accounting->limiter().Settle(*r, accounting::Amounts{}, NowUnixS());
    return;
  }
  if (!a.admitted) return FailLimited(a);
  reservation_ = std::move(r);
  limit_admission_ = std::move(a);
  limits_held_ = true;
  Attempt();  // to reserved_endpoint_ while it has room
}

void Exchange::FailLimited(const accounting::Admission& a) {
  const std::string limit = a.unavailable ? "limits_unavailable"
                            : a.exceeded  ? accounting::LimitName(*a.exceeded)
                                          : "unknown";
  ctx_->stats.RecordRateLimited(req_.tenant, limit);
  const double now = NowUnixS();
  const std::string message = accounting::RefusalMessage(a, req_.tenant, estimate_, now);
  http::Headers extra;
  for (auto& [name, value] : accounting::RefusalHeaders(a, now)) extra.Add(name, value);
  for (auto& [name, value] : codec_ ? accounting::AnthropicRateLimitHeaders(a, now)
                                    : accounting::OpenAiRateLimitHeaders(a))
    extra.Add(name, value);
  if (a.unavailable) {  // a fail_closed tenant: the limits could not be checked
    return FailBeforeResponse(Status(ErrorCode::kUnavailable, message), "none", "rate_limited",
                              std::move(extra));
  }
  // Larger than the limit itself: 400 invalid_request_error on both fronts (Anthropic
  // answers a request it can never serve so, e.g. a prompt over the context window).
  FailBeforeResponse(
      Status(a.too_large ? ErrorCode::kInvalidArgument : ErrorCode::kResourceExhausted, message),
      "none", "rate_limited", std::move(extra), OpenAiLimitBody(a, message));
}

void Exchange::Account(const char* outcome, int status) {
  if (accounted_ || !ctx_->accounting) return;
  accounted_ = true;
  const double now_unix = NowUnixS();
  accounting::TokenCounts t;
  bool estimated = false;
  if (usage_) {
    t.prompt = usage_->prompt_tokens;
    t.cached = usage_->cached_tokens;
    t.completion = usage_->completion_tokens;
    const int64_t writes =
        std::max(cache_creation_, decoder_ ? decoder_->cache_creation_tokens() : int64_t{0});
    t.cache_creation = std::clamp<int64_t>(writes, 0, t.prompt - t.cached);
  } else if (reached_upstream_) {
    // No usage (cut stream, cancelled, an upstream that sends none): the estimate. A
    // request no upstream took (every connect failed, or an error status) used nothing.
    estimated = true;
    if (upstream_status_ == 200 || content_chunks_ > 0) {
      t.prompt = accounting::EstimatePromptTokens(static_cast<int64_t>(req_.prompt_text.size()),
                                                  ctx_->accounting->config().estimate);
    }
    t.completion = content_chunks_;
  }
  std::optional<accounting::Price> price;
  if (reached_upstream_) price = ctx_->accounting->PriceFor(provider_, req_.model);
  const accounting::NanoUsd cost = price ? accounting::Cost(*price, t) : 0;
  if (reservation_) {
    ctx_->accounting->limiter().Settle(
        *reservation_,
        reached_upstream_ ? accounting::SettledAmounts(t, cost) : accounting::Amounts{}, now_unix);
    reservation_.reset();
  }
  if (!reached_upstream_) return;
  ctx_->stats.RecordCost(req_.tenant, req_.model, cost, t.cache_creation, price.has_value());
  if (!ctx_->accounting->ledger_enabled()) return;
  const Seconds now = ctx_->clock.Now();
  accounting::UsageRecord r;
  r.record_id = ctx_->NewRecordId();
  r.time_ms = static_cast<int64_t>(arrival_unix_s_ * 1000);
  r.request_id = req_.request_id;
  r.tenant = req_.tenant;
  r.front = codec_ ? "anthropic" : "openai";
  r.requested_model = requested_model_;
  r.served_model = req_.model;
  r.provider = provider_;
  r.endpoint = decision_.endpoint;
  r.tokens = t;
  r.usage_estimated = estimated;
  r.ttft_ms = first_token_ ? ctx_->config.RealSeconds(*first_token_ - arrival_) * 1e3 : -1;
  r.e2e_ms = ctx_->config.RealSeconds(now - arrival_) * 1e3;
  r.outcome = outcome;
  r.status = status;
  r.policy_decision = evaluated_ ? DecisionHeaderValue(record_) : std::string();
  r.cost_nano_usd = cost;
  r.priced = price.has_value();
  r.gateway = ctx_->instance;
  ctx_->accounting->Submit(std::move(r));
}

void Exchange::Attempt() {
  ctx_->RefreshBreakers();
  if (!evaluated_ && !ApplyPolicies()) return;     // rejected: answered
  if (codec_) codec_->SetServedModel(req_.model);  // a policy's alternative, if any
  // Retries stay within the set the policies allowed for the first attempt.
  std::vector<routing::EndpointId> candidates = allowed_;
  std::erase_if(candidates, [&](const auto& id) {
    return std::find(tried_.begin(), tried_.end(), id) != tried_.end();
  });
  const api::anthropic::NativeRequest* native = codec_ ? codec_->native_anthropic() : nullptr;
  if (Status s = DropUnsupportedEndpoints(*ctx_, req_.kind, native, tried_.empty(), candidates);
      !s.ok())
    return FailBeforeResponse(s, "none");
  // A provider retrying with no other endpoint for the model retries on itself.
  if (candidates.empty() && !tried_.empty()) {
    const Endpoint* last = ctx_->Find(tried_.back());
    if (last && last->provider) candidates.push_back(last->info.id);
  }
  Seconds now = ctx_->clock.Now();
  if (candidates.empty()) {  // every allowed endpoint was tried
    http::Headers h;
    h.Add("Retry-After", std::to_string(ctx_->RetryAfterUnhealthyS(allowed_)));
    return FailBeforeResponse(Status(ErrorCode::kUnavailable, last_error_), "none", "error",
                              std::move(h));
  }
  // Passive health, then admission: healthy endpoints only, and among them those with
  // room; every healthy one full: wait in the pool's queue. An endpoint removed since the
  // policies ran (--kubernetes: its Pod left) is no candidate either.
  std::vector<routing::EndpointId> healthy = candidates;
  std::erase_if(healthy, [&](const auto& id) {
    const Endpoint* e = ctx_->Find(id);
    return !e || !e->healthy;
  });
  if (healthy.empty()) {
    int retry = ctx_->RetryAfterUnhealthyS(candidates);
    http::Headers h;
    h.Add("Retry-After", std::to_string(retry));
    std::string message = last_error_;
    if (tried_.empty()) {
      // A policy that removed healthy endpoints (a provider, for a pii request) is named:
      // the client learns why the model's other endpoints were no candidates.
      std::string excluded = evaluated_ ? PolicyExclusionNote(*ctx_, record_, req_.model) : "";
      message = excluded.empty()
                    ? fmt::format("No healthy endpoint serves model '{}' now; retry after {} s.",
                                  req_.model, retry)
                    : fmt::format(
                          "No healthy endpoint allowed by the policies serves model '{}' "
                          "now ({}); retry after {} s.",
                          req_.model, excluded, retry);
    }
    return FailBeforeResponse(Status(ErrorCode::kUnavailable, message), "none", "error",
                              std::move(h));
  }
  // Cooldown (routing/router.h): an endpoint that answered 429/503/529 with a Retry-After
  // is skipped until it passed. Every healthy one cooling down: a retry fails as when no
  // endpoint is left (503, the last endpoint's error); a new request is refused here, as
  // a full pool's (429 rate_limit_error; /v1/messages 529 overloaded_error), with
  // Retry-After until the first is back, and no upstream is called (they asked not to be).
  std::vector<routing::EndpointId> ready = healthy;
  std::erase_if(ready,
                [&](const auto& id) { return ctx_->router.CoolingUntil(id, now).has_value(); });
  if (ready.empty()) {
    int retry = ctx_->RetryAfterUnhealthyS(candidates);
    http::Headers h;
    h.Add("Retry-After", std::to_string(retry));
    if (!tried_.empty()) {
      return FailBeforeResponse(Status(ErrorCode::kUnavailable, last_error_), "none", "error",
                                std::move(h));
    }
    std::string message = fmt::format(
        "Every endpoint serving model '{}' asked the gateway to wait; retry after {} s.",
        req_.model, retry);
    spdlog::info("request {}: {}", req_.request_id, message);
    return FailBeforeResponse(
        Status(codec_ ? ErrorCode::kUnavailable : ErrorCode::kResourceExhausted, message), "none",
        "overloaded", std::move(h));
  }
  // Cooling endpoints have no room (admission sees them unavailable), so a queued request
  // may still go to one once its cooldown is over.
  std::vector<routing::EndpointId> room = ctx_->admission.controller().WithRoom(ready);
  if (room.empty()) return Queue(std::move(healthy));
  candidates = std::move(room);
  // Limits reserved for a pick that still has room: the attempt goes there.
  if (!reserved_endpoint_.empty() &&
      std::find(candidates.begin(), candidates.end(), reserved_endpoint_) != candidates.end())
    candidates = {reserved_endpoint_};
  auto decision = ctx_->router.Pick(features_, candidates, strategy_, now);
  if (!decision.ok()) {
    Status s = decision.status();
    if (!tried_.empty()) s = Status(ErrorCode::kUnavailable, last_error_);
    return FailBeforeResponse(s, "none");
  }
  // The tenant's limits, at the picked endpoint's price (reserved once per price).
  if (const Endpoint* picked = ctx_->Find(decision->endpoint)) {
    std::optional<accounting::Amounts> want = WorstCaseOn(*picked);
    if (want && !(limits_held_ && *want == estimate_))
      return ReserveLimits(decision->endpoint, *want);
  }
  decision_ = std::move(*decision);
  const Endpoint* ep = ctx_->Find(decision_.endpoint);
  if (!ep) {
    return FailBeforeResponse(Status(ErrorCode::kInternal, "router picked an unknown endpoint"),
                              "none");
  }
  features_.request_id =
      tried_.empty() ? router_key_ : router_key_ + "-retry" + std::to_string(tried_.size());
  record_.request_id = req_.request_id;  // the id the client sees (x-request-id)
  record_.endpoint = decision_.endpoint;
  record_.predicted_ttft_s = decision_.predicted_ttft_s;
  if (!ep->provider) ctx_->stats.RecordPrefixIndex(decision_.precise);
  LogDecision(*ctx_, record_);
  ctx_->router.OnDispatched(features_, decision_, now);
  dispatched_ = true;
  ctx_->admission.controller().OnDispatched(decision_.endpoint, req_.tenant);
  slot_ = decision_.endpoint;

  decoder_.reset();
  upstream_retry_.reset();
  upstream_should_retry_.clear();
  relay_raw_ = false;
  upstream_stream_error_ = false;
  assembler_.reset();
  assembled_data_ = false;
  const bool stream_upstream = !streamed_body_.empty();
  auto call =
      BuildUpstreamCall(ctx_->config, *ep, req_, stream_upstream ? streamed_body_ : upstream_body_,
                        path_, req_.request_id, native, stream_upstream);
  if (!call.ok()) return FailUnsendable(call.status());
  relay_raw_ = call->passthrough;
  if (call->assembled) assembler_.emplace(req_.kind);
  if (call->anthropic) decoder_.emplace(static_cast<int64_t>(std::time(nullptr)));

  auto self = shared_from_this();
  http::ClientCallbacks cb;
  cb.on_headers = [self](int status, const http::Headers& h) { self->OnHeaders(status, h); };
  cb.on_data = [self](std::string_view d) { self->OnData(d); };
  cb.on_complete = [self](Status s) { self->OnComplete(std::move(s)); };
  reached_upstream_ = true;
  provider_ = ep->info.pool;
  call_ = http::StartCall(ctx_->executor, std::move(call->request), std::move(cb));
}

void Exchange::Queue(std::vector<routing::EndpointId> candidates) {
  AdmissionGate::Refusal refusal;
  std::shared_ptr<AdmissionWaiter> self = shared_from_this();
  auto ticket =
      ctx_->admission.Enqueue(self, req_.tenant, priority_, std::move(candidates), refusal);
  if (!ticket) return Refused(refusal.status, refusal.retry_after_s);
  ticket_ = *ticket;
}

void Exchange::Admitted() {
  ticket_.reset();
  if (finished_) return;
  Attempt();
}

void Exchange::Refused(const Status& s, int retry_after_s) {
  ticket_.reset();
  if (finished_) return;
  spdlog::info("request {}: {}", req_.request_id, s.message());
  http::Headers h;
  h.Add("Retry-After", std::to_string(retry_after_s));
  // The pool is at capacity: on /v1/messages that is Anthropic's 529 overloaded_error (its
  // 429 rate_limit_error means the caller's own limits, as the tenant limits' 429 here);
  // the OpenAI fronts keep 429 rate_limit_error. Both SDKs retry either after Retry-After.
  if (codec_)
    return FailBeforeResponse(Status(ErrorCode::kUnavailable, s.message()), "none", "overloaded",
                              std::move(h));
  FailBeforeResponse(s, "none", "overloaded", std::move(h));
}

double Exchange::Affinity(std::span<const std::string> with_room) const {
  double hit = 0;
  for (const auto& c : ctx_->router.Score(features_, with_room, ctx_->clock.Now()))
    hit = std::max(hit, c.matched_tokens);
  return hit;
}

void Exchange::LeaveQueue() {
  if (!ticket_) return;
  ctx_->admission.Cancel(*ticket_);
  ticket_.reset();
}

void Exchange::ReleaseSlot() {
  if (slot_.empty()) return;
  std::string slot = std::move(slot_);
  slot_.clear();
  ctx_->admission.controller().OnFinished(slot, req_.tenant, ctx_->clock.Now());
  ctx_->admission.Pump();
}

void Exchange::FailUnsendable(const Status& s) {
  last_error_ = s.message();
  if (codec_) {
    codec_->SendError(*writer_, s, RoutedHeaders());
  } else {
    writer_->Send(HttpStatusFor(s.code()), "application/json", api::OpenAiErrorBody(s),
                  RoutedHeaders());
  }
  Finish(routing::Outcome::kError, "error");
}

bool Exchange::Abort(const Status& s) {
  if (finished_) return false;
  spdlog::warn("request {}: aborted: {}", req_.request_id, s.message());
  last_error_ = s.message();
  finished_ = true;  // the cancelled call's completion is ignored
  LeaveQueue();
  if (call_) {
    auto call = call_;
    call->Cancel();
  }
  if (response_started_) {
    writer_->Write(StreamErrorBytes(s, /*abort=*/true));
    writer_->End();
  } else if (codec_) {
    codec_->SendError(*writer_, s, RoutedHeaders());
  } else {
    writer_->Send(HttpStatusFor(s.code()), "application/json", api::OpenAiErrorBody(s),
                  RoutedHeaders());
  }
  Finish(routing::Outcome::kError, "error");
  return true;
}

void Exchange::OnClientClosed() {
  if (finished_) return;
  spdlog::info("request {}: client disconnected; cancelling upstream", req_.request_id);
  last_error_ = "client disconnected";
  LeaveQueue();
  if (call_) {
    auto call = call_;  // Cancel may complete the call and reset call_
    call->Cancel();
  }
  Finish(routing::Outcome::kCancelled, "cancelled");
}

bool Exchange::ApplyPolicies() {
  evaluated_ = true;
  Seconds now = ctx_->clock.Now();
  // Endpoints that could never serve this API are no candidates (nor in a 403's list).
  const api::anthropic::NativeRequest* native = codec_ ? codec_->native_anthropic() : nullptr;
  auto ev = EvaluatePolicies(*ctx_, policy_, features_, now, [&](const Endpoint& ep) {
    return SupportsRequest(ep, req_.kind, native);
  });
  if (!ev.ok()) {
    record_ = RejectionRecord(policy_, ev.status(), now, req_.request_id);
    CountDecision(*ctx_, record_);
    LogDecision(*ctx_, record_);
    spdlog::info("request {}: {}", req_.request_id, ev.status().message());
    FailBeforeResponse(ev.status(), "none", "rejected");
    return false;
  }
  priority_ = static_cast<int>(ev->request_priority.value_or(0));
  record_ = policy::RoutedRecord(*ev, policy_.info, now, req_.request_id, "", 0);
  record_.predicted_ttft_s.reset();
  CountDecision(*ctx_, record_);
  allowed_ = AllowedEndpoints(*ctx_, *ev, req_.model);
  if (ev->chosen_model != req_.model) {  // an alternative serves it
    req_.model = ev->chosen_model;
    req_.body["model"] = ev->chosen_model;
    BuildBodies();
    features_.model = ev->chosen_model;
  }
  return true;
}

std::string Exchange::GatewayMessage(std::string_view what) const {
  return fmt::format("{}; request id {}.", what, req_.request_id);
}

http::Headers Exchange::DecisionHeaders() const {
  http::Headers h;
  h.Add(kRequestIdHeader, req_.request_id);
  if (evaluated_) h.Add(std::string(policy::kDecisionHeader), DecisionHeaderValue(record_));
  if (limit_admission_) {
    for (auto& [name, value] :
         codec_ ? accounting::AnthropicRateLimitHeaders(*limit_admission_, NowUnixS())
                : accounting::OpenAiRateLimitHeaders(*limit_admission_))
      h.Add(name, value);
  }
  return h;
}

void Exchange::FailBeforeResponse(const Status& s, const std::string& endpoint, const char* outcome,
                                  http::Headers extra, std::string openai_body) {
  finished_ = true;
  ReleaseSlot();
  if (stall_timer_) stall_timer_->cancel();
  ctx_->stats.RecordRequest(endpoint, StrategyLabel(), outcome);
  // The status the client gets: Anthropic's on /v1/messages (kUnavailable: 529).
  const int status = codec_ ? api::anthropic::ErrorHttpStatus(s.code()) : HttpStatusFor(s.code());
  LogAccess(outcome, status, s.message());
  Account(outcome, status);
  if (evaluated_ && record_.outcome == "routed" && record_.endpoint.empty()) {
    record_.outcome = "error";  // evaluated, but nothing could be picked
    record_.endpoint = "none";
    record_.message = s.message();
    LogDecision(*ctx_, record_);
  }
  if (writer_->closed()) return;
  http::Headers headers = DecisionHeaders();
  for (auto& [name, value] : extra.items) headers.Add(std::move(name), std::move(value));
  if (codec_) return codec_->SendError(*writer_, s, std::move(headers));
  writer_->Send(HttpStatusFor(s.code()), "application/json",
                openai_body.empty() ? api::OpenAiErrorBody(s) : std::move(openai_body),
                std::move(headers));
}

std::string Exchange::StrategyLabel() const {
  return !decision_.strategy.empty() ? decision_.strategy
         : !strategy_.empty()        ? strategy_
                                     : ctx_->config.strategy;
}

void Exchange::LogAccess(const char* outcome, int status, const std::string& error) {
  if (CurrentLogLevel() > LogLevel::kInfo) return;
  Seconds now = ctx_->clock.Now();
  const std::string strategy = StrategyLabel();
  LogFields f = {
      {"request_id", req_.request_id},
      {"tenant", req_.tenant},
      {"model_requested", requested_model_},
      {"model_served", req_.model},
      {"endpoint", decision_.endpoint.empty() ? std::string("none") : decision_.endpoint},
      {"strategy", strategy},
      {"stream", int64_t{req_.stream ? 1 : 0}},
      {"status", int64_t{status}},
      {"outcome", std::string(outcome)},
      {"attempts", int64_t{static_cast<int64_t>(tried_.size()) + (dispatched_ ? 1 : 0)}},
  };
  if (dispatched_) f.emplace_back("predicted_ttft_s", decision_.predicted_ttft_s);
  if (first_token_) f.emplace_back("ttft_s", *first_token_ - arrival_);
  if (usage_) {
    f.emplace_back("prompt_tokens", int64_t{usage_->prompt_tokens});
    f.emplace_back("cached_tokens", int64_t{usage_->cached_tokens});
    f.emplace_back("completion_tokens", int64_t{usage_->completion_tokens});
  }
  f.emplace_back("duration_s", now - arrival_);
  // An upstream's error text may echo a key: redacted (common/redact.h).
  if (!error.empty()) f.emplace_back("error", RedactSecrets(error, ctx_->ApiKeys()));
  LogEvent(LogLevel::kInfo, "access", "request", f);
}

void Exchange::Finish(routing::Outcome outcome, const char* label) {
  finished_ = true;
  LeaveQueue();
  if (stall_timer_) stall_timer_->cancel();
  Seconds now = ctx_->clock.Now();
  // The status the client got (e.g. 503 for a whole response the drain aborted, 502 for an
  // upstream 401 answered in the gateway's words); 499 when it got none (gone before).
  const int status = writer_->status()                         ? writer_->status()
                     : outcome == routing::Outcome::kCancelled ? 499
                     : upstream_status_                        ? upstream_status_
                                                               : 502;
  LogAccess(label, status, outcome == routing::Outcome::kSuccess ? std::string() : last_error_);
  Account(label, status);
  if (dispatched_) {
    ctx_->router.OnFinished(features_.request_id, ToRouting(usage_.value_or(api::Usage{})), outcome,
                            now);
  }
  // A request that never reached an endpoint (its client left the admission queue) counts
  // as FailBeforeResponse's refusals do: endpoint "none", the strategy it would have used.
  ctx_->stats.RecordRequest(decision_.endpoint.empty() ? std::string("none") : decision_.endpoint,
                            StrategyLabel(), label);
  if (outcome == routing::Outcome::kSuccess) {
    // vLLM keeps the reply's KV too: the next turn re-sends prompt + reply.
    if (dispatched_ && req_.kind == api::ApiKind::kChatCompletions) {
      ctx_->router.OnCompletionText(
          decision_.endpoint,
          routing::ChainedBlockHashes(api::RenderWithReply(req_.prompt_text, reply_),
                                      ctx_->config.block_chars, ctx_->prefix_hash_key),
          now);
    }
    ctx_->stats.RecordE2e(req_.model, now - arrival_);
    if (usage_) ctx_->stats.RecordUsage(req_.tenant, req_.model, ToRouting(*usage_));
  }
  ReleaseSlot();  // last: it may start queued requests
}

bool Exchange::CanRetry() const {
  const Endpoint* ep = ctx_->Find(decision_.endpoint);
  int budget = ep && ep->provider ? ep->provider->retries_before_first_byte : 1;
  return retries_ < budget;
}

http::Headers Exchange::RoutedHeaders() const {  // DecisionHeaders + routing facts
  http::Headers h = DecisionHeaders();
  h.Add(kModelHeader, req_.model);  // the served model (a policy may pick an alternative)
  h.Add("x-kinference-endpoint", decision_.endpoint);
  h.Add("x-kinference-strategy", decision_.strategy);
  h.Add("x-kinference-predicted-ttft-ms", fmt::format("{:.3f}", decision_.predicted_ttft_s * 1e3));
  // The prefix-cache hit the router expected on the chosen endpoint, and which index said so.
  h.Add("x-kinference-prefix-index", decision_.precise ? "precise" : "approximate");
  h.Add("x-kinference-matched-tokens", fmt::format("{:.0f}", decision_.matched_tokens));
  return h;
}

}  // namespace kinference::gateway
