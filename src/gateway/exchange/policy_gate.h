// PolicyGate: InferencePolicy on the gateway's request path (docs/policy.md, "Gateway").
//
// Per request, in order:
//  1. BeginPolicyRequest (HandleParsed): takes ONE PolicyStore snapshot, kept by the
//     request until it ends (retries included), so a reload never changes an in-flight
//     decision; builds policy::RequestInfo (tenant, requested model, estimated prompt
//     tokens, tools, stream) and runs the built-in taggers when some policy of the
//     snapshot matches on tags (x-kinference-tags only when tagging.trusted_tag_header).
//     Taggers and the classifier scan PolicyRequest::scan_text: every string value of
//     the client's body as received (policy/request_text.h; for /v1/messages the
//     original Anthropic body, then the values of the client's anthropic-version and
//     anthropic-beta headers, which go upstream with it), not the routing rendering, so
//     that PII in tool arguments, descriptions, `user`, metadata, documents... is seen.
//  2. RunClassifier: the external classifier, when configured and needed; a failure or
//     timeout lands in RequestInfo::failed_taggers (policies decide per onTaggerFailure).
//  3. EvaluatePolicies (first Attempt): scores every healthy endpoint of the requested
//     model and of the snapshot's alternative models with Router::Score, fills queue
//     depth and KV usage from the last scrape, and runs policy::Evaluate. The router
//     then picks only among AllowedEndpoints; retries stay within that set.
//  4. Records: CountDecision once per request (counters + /metrics mirror),
//     LogDecision for GET /debug/decisions.
// Reload (ReloadPolicies, PolicyReloader) reads files: it runs on the io thread from a
// timer or SIGHUP, never per request; an invalid set is logged and the last valid one
// stays.
//
// Thread-safety: everything here runs on the gateway's io_context thread.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai/request.h"
#include "gateway/context.h"
#include "http/server.h"
#include "policy/evaluate.h"

namespace kinference::gateway {

// Header naming the model that served the request (an alternative chosen by policy).
inline constexpr const char* kModelHeader = "x-kinference-model";

// The client headers of a /v1/messages request whose values are added to the scan text
// (the only ones passed upstream as the client sent them); no other header is scanned.
inline constexpr std::string_view kScannedAnthropicHeaders[] = {"anthropic-version",
                                                                "anthropic-beta"};

struct PolicyRequest {
  std::shared_ptr<const policy::PolicySet> set;  // the request's one snapshot
  policy::RequestInfo info;
  std::string scan_text;  // what taggers scanned; empty when no policy needs tags
};

// True when some policy of `set` has tag conditions (only then are taggers run).
bool NeedsTags(const policy::PolicySet& set);

// Scans `req.original` when `req.body` is a translation of it (/v1/messages; the
// kScannedAnthropicHeaders of `headers` are then scanned too), else `req.body`.
PolicyRequest BeginPolicyRequest(const GatewayContext& ctx, const api::ParsedRequest& req,
                                 const http::Headers& headers);

// Runs the external classifier on `text` when one is configured and the snapshot needs
// tags, adding its tags (or its failure) to `pr`, then calls `next` (at once, before
// returning, when no call is needed). `pr` must stay alive until `next` runs.
void RunClassifier(GatewayContext& ctx, PolicyRequest& pr, std::string text,
                   std::function<void()> next);

// Whether an endpoint can serve the request's API at all (e.g. no Anthropic provider for
// /v1/completions); empty: every endpoint can.
using EndpointFilter = std::function<bool(const Endpoint&)>;

// Endpoints `usable` rejects are no candidates: policies never see, list or pick them.
// Errors: the rejection of policy::Evaluate (kPermissionDenied, kUnavailable).
Result<policy::Evaluation> EvaluatePolicies(GatewayContext& ctx, const PolicyRequest& pr,
                                            const routing::RequestFeatures& features, Seconds now,
                                            const EndpointFilter& usable = {});

// Endpoints the router may pick: the remaining candidates of ev.chosen_model. When the
// evaluation had no candidate at all (none healthy: not a policy decision), the
// requested model's endpoints, so that Pick reports its usual error.
std::vector<routing::EndpointId> AllowedEndpoints(const GatewayContext& ctx,
                                                  const policy::Evaluation& ev,
                                                  const std::string& requested_model);

// The rejection record of `pr` (matched: every policy whose match held).
policy::DecisionRecord RejectionRecord(const PolicyRequest& pr, const Status& rejection,
                                       Seconds now, std::string request_id);

void CountDecision(GatewayContext& ctx, const policy::DecisionRecord& record);
void LogDecision(GatewayContext& ctx, const policy::DecisionRecord& record);

// When every endpoint the policies allowed is unhealthy: the removal that took a healthy
// endpoint of `model` out of the candidates (the first in evaluation order), as
// "policy 'NAME' excluded the healthy endpoint(s) E (reason)", so that the 503 says which
// policy left no candidate (health is not policy: the status stays the unhealthy one's,
// with Retry-After); empty when no policy removed a healthy endpoint.
std::string PolicyExclusionNote(const GatewayContext& ctx, const policy::DecisionRecord& record,
                                const std::string& model);

// GET /debug/decisions. With `tenants:` configured the caller must present a tenant's
// credentials (an anonymous request gets 401, OpenAI error shape) and sees only that
// tenant's decisions, unless it is listed in policies.debug_admin_tenants (sees all).
void ServeDecisions(const GatewayContext& ctx, const http::Request& request,
                    http::ResponseWriter& writer);

// Reloads the policy files (only when a file's mtime or size changed with
// `only_if_changed`); logs the outcome and updates the generation gauge and the reload
// failure counter. File I/O: timer or signal handler on the io thread only.
Status ReloadPolicies(GatewayContext& ctx, bool only_if_changed);

// Polls ReloadPolicies(ctx, true) every policies.reload_interval_s real seconds (not
// started when there are no files or the interval is 0).
class PolicyReloader : public std::enable_shared_from_this<PolicyReloader> {
 public:
  explicit PolicyReloader(std::shared_ptr<GatewayContext> ctx);
  void Start();
  void Stop();

 private:
  void Arm();
  std::shared_ptr<GatewayContext> ctx_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;
};

}  // namespace kinference::gateway
