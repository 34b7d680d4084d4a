#include "gateway/exchange/policy_gate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <chrono>
#include <set>

#include "gateway/front/tenants.h"
#include "policy/request_text.h"

namespace kinference::gateway {

bool NeedsTags(const policy::PolicySet& set) {
  return std::any_of(set.policies.begin(), set.policies.end(),
                     [](const policy::Policy& p) { return !p.match.tags.empty(); });
}

namespace {

bool ToolsPresent(const api::ParsedRequest& req) {
  const auto* tools = req.body.if_contains("tools");
  return tools && tools->is_array() && !tools->as_array().empty();
}

// Models whose endpoints are candidates: the requested one and every alternative the
// snapshot names (Evaluate ignores those of policies that do not match).
std::set<std::string> ConsideredModels(const policy::PolicySet& set, const std::string& model) {
  std::set<std::string> models{model};
  for (const auto& p : set.policies) {
    for (const auto& a : p.alternatives) models.insert(a.model);
  }
  return models;
}

// /v1/messages: the client's headers that go upstream as sent (to Anthropic providers,
// proxy.cc BuildAnthropicCall) are scanned like the body; every occurrence, in order.
void AppendForwardedHeaders(const http::Headers& headers, std::string& scan_text) {
  for (std::string_view name : kScannedAnthropicHeaders) {
    for (const auto& [k, v] : headers.items) {
      if (boost::beast::iequals(k, name)) policy::AppendScanText(scan_text, v);
    }
  }
}

}  // namespace

PolicyRequest BeginPolicyRequest(const GatewayContext& ctx, const api::ParsedRequest& req,
                                 const http::Headers& headers) {
  PolicyRequest pr;
  pr.set = ctx.policy.store.Current();
  policy::RequestInfo& info = pr.info;
  info.tenant = req.tenant;
  info.model = req.model;
  info.prompt_tokens = policy::EstimateTokens(req.prompt_text);
  info.tools_present = ToolsPresent(req);
  info.stream = req.stream;
  if (NeedsTags(*pr.set)) {
    const bool translated = !req.original.is_null();
    // The whole scan, not only its text: the value spans feed the pii tagger's split-value
    // check and the unscannable kinds the policies' onUnscannableContent.
    policy::RequestScan scan =
        translated ? policy::ScanRequest(req.original) : policy::ScanRequest(req.body);
    pr.scan_text = std::move(scan.text);
    if (translated) AppendForwardedHeaders(headers, pr.scan_text);
    info.unscannable = std::move(scan.unscannable);
    policy::TaggerInput in;
    in.text = pr.scan_text;
    in.values = scan.values;  // spans of the body's items; the headers appended come after
    in.role_values = scan.role_values;
    in.prompt_tokens = info.prompt_tokens;
    in.tools_present = info.tools_present;
    if (ctx.policy.taggers.trust_tag_header) in.tag_header = headers.Find(policy::kTagsHeader);
    info.tags = policy::RunTaggers(ctx.policy.taggers, in);
  }
  return pr;
}

void RunClassifier(GatewayContext& ctx, PolicyRequest& pr, std::string text,
                   std::function<void()> next) {
  if (!ctx.policy.classifier || !NeedsTags(*pr.set)) return next();
  policy::ExternalClassifier& classifier = *ctx.policy.classifier;
  std::string name = classifier.name();
  classifier.Classify(std::move(text), ctx.policy.classifier_timeout_s,
                      [&pr, name, next = std::move(next)](Result<std::vector<std::string>> r) {
                        if (r.ok()) {
                          std::set<std::string> tags(pr.info.tags.begin(), pr.info.tags.end());
                          tags.insert(r->begin(), r->end());
                          pr.info.tags.assign(tags.begin(), tags.end());
                        } else {
                          spdlog::warn("tagger {} failed: {}", name, r.status().message());
                          pr.info.failed_taggers.push_back(name);
                        }
                        next();
                      });
}

namespace {
// What an endpoint that cannot serve now (ejected, unhealthy) is predicted to take, for the
// policies' TTFT bounds: longer than any bound an operator would write (a day).
constexpr double kUnservablePredictedTtftS = 86400;
}  // namespace

Result<policy::Evaluation> EvaluatePolicies(GatewayContext& ctx, const PolicyRequest& pr,
                                            const routing::RequestFeatures& features, Seconds now,
                                            const EndpointFilter& usable) {
  std::set<std::string> models = ConsideredModels(*pr.set, pr.info.model);
  std::vector<routing::EndpointId> ids;
  for (const auto& ep : ctx.endpoints) {
    if (models.count(ep.info.model) && (!usable || usable(ep))) ids.push_back(ep.info.id);
  }
  // The router scores healthy endpoints only, and none cooling down. An ejected (or
  // cooling) one is still a candidate for the policies (health is not policy: a request
  // whose allowed endpoints are all down gets 503 with Retry-After from the exchange, not
  // a policy's 403), predicted never to meet a TTFT bound, so spillover rules move past it.
  std::vector<routing::CandidateScore> scores = ctx.router.Score(features, ids, now);
  if (scores.size() < ids.size()) {  // some were skipped: no search on the common path
    std::set<routing::EndpointId> scored;
    for (const auto& s : scores) scored.insert(s.endpoint);
    for (const auto& id : ids) {
      if (scored.count(id)) continue;
      routing::CandidateScore unscored;
      unscored.endpoint = id;
      unscored.predicted_ttft_s = kUnservablePredictedTtftS;
      scores.push_back(std::move(unscored));
    }
  }
  std::vector<policy::Candidate> candidates;
  for (const auto& score : scores) {
    const Endpoint* ep = ctx.Find(score.endpoint);
    if (!ep) continue;
    policy::Candidate c;
    c.endpoint = score.endpoint;
    c.model = ep->info.model;
    c.predicted_ttft_s = score.predicted_ttft_s;
    c.metrics_age_s = score.metrics_age_s;
    if (ep->provider) {
      c.cls = policy::EndpointClass::kProvider;
      c.provider = ep->provider->name;
    } else {
      c.cls = policy::EndpointClass::kLocal;
      c.pool = ep->info.pool;
      if (ep->last_metrics) {
        c.queue_depth = ep->last_metrics->num_requests_waiting;
        c.kv_cache_usage = ep->last_metrics->kv_cache_usage_perc;
      }
    }
    candidates.push_back(std::move(c));
  }
  return policy::Evaluate(*pr.set, pr.info, candidates);
}

std::vector<routing::EndpointId> AllowedEndpoints(const GatewayContext& ctx,
                                                  const policy::Evaluation& ev,
                                                  const std::string& requested_model) {
  if (ev.remaining.empty()) return ctx.EndpointsFor(requested_model);
  std::vector<routing::EndpointId> ids;
  for (const auto& c : ev.ForChosenModel()) ids.push_back(c.endpoint);
  return ids;
}

policy::DecisionRecord RejectionRecord(const PolicyRequest& pr, const Status& rejection,
                                       Seconds now, std::string request_id) {
  return policy::RejectedRecord(rejection, pr.info, pr.set->generation, now, std::move(request_id),
                                policy::MatchingPolicies(*pr.set, pr.info));
}

void CountDecision(GatewayContext& ctx, const policy::DecisionRecord& record) {
  ctx.policy.counters.Record(record);
  for (const auto& [key, n] : ctx.policy.counters.Snapshot()) {
    ctx.stats.SetPolicyDecisions(key.first, key.second, static_cast<double>(n));
  }
}

void LogDecision(GatewayContext& ctx, const policy::DecisionRecord& record) {
  ctx.policy.log.Add(record);
}

std::string PolicyExclusionNote(const GatewayContext& ctx, const policy::DecisionRecord& record,
                                const std::string& model) {
  std::string policy_name, endpoints, reason;
  int n = 0;
  for (const auto& r : record.removed) {
    const Endpoint* ep = ctx.Find(r.endpoint);
    if (!ep || !ep->healthy || ep->info.model != model) continue;
    if (policy_name.empty()) {
      policy_name = r.policy;
      reason = r.reason;
    }
    if (r.policy != policy_name) continue;
    if (n < 4) endpoints += (n ? ", " : "") + r.endpoint;
    ++n;
  }
  if (policy_name.empty()) return {};
  if (n > 4) endpoints += fmt::format(" and {} more", n - 4);
  return fmt::format("policy '{}' excluded the healthy endpoint{} {} ({})", policy_name,
                     n > 1 ? "s" : "", endpoints, reason);
}

void ServeDecisions(const GatewayContext& ctx, const http::Request& request,
                    http::ResponseWriter& writer) {
  const TenantsConfig& tenants = ctx.config.tenants;
  if (!tenants.enabled) return writer.Send(200, "application/json", ctx.policy.log.ToJson());
  // Anonymous access is no identity here: decisions name tenants, models and prompts' tags.
  TenantsConfig identified = tenants;
  identified.anonymous_tenant.clear();
  auto tenant = Identify(identified, request.headers, ApiFront::kOpenAi);
  if (!tenant.ok()) return http::SendOpenAiError(writer, tenant.status());
  const auto& admins = ctx.config.policies.debug_admin_tenants;
  if (std::find(admins.begin(), admins.end(), *tenant) != admins.end()) {
    return writer.Send(200, "application/json", ctx.policy.log.ToJson());
  }
  writer.Send(200, "application/json", ctx.policy.log.ToJson([&](const policy::DecisionRecord& r) {
    return r.tenant == *tenant;
  }));
}

Status ReloadPolicies(GatewayContext& ctx, bool only_if_changed) {
  policy::PolicyStore& store = ctx.policy.store;
  if (store.paths().empty()) return Status::Ok();  // no policies configured: nothing to load
  uint64_t before = store.Current()->generation;
  Status s = only_if_changed ? store.ReloadIfChanged() : store.Reload();
  uint64_t after = store.Current()->generation;
  if (!s.ok()) {
    spdlog::error("policy reload failed; keeping generation {}: {}", after, s.message());
    ctx.stats.RecordPolicyReloadFailure();
  } else if (after != before) {
    spdlog::info("policies reloaded: generation {} ({} policies)", after,
                 store.Current()->policies.size());
  }
  ctx.stats.SetPolicyGeneration(after);
  return s;
}

PolicyReloader::PolicyReloader(std::shared_ptr<GatewayContext> ctx)
    : ctx_(std::move(ctx)), timer_(ctx_->executor) {}

void PolicyReloader::Start() {
  stopped_ = false;
  if (ctx_->config.policies.files.empty() || ctx_->config.policies.reload_interval_s <= 0) return;
  Arm();
}

void PolicyReloader::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void PolicyReloader::Arm() {
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(ctx_->config.policies.reload_interval_s)));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->stopped_) return;
    ReloadPolicies(*self->ctx_, true);
    self->Arm();
  });
}

}  // namespace kinference::gateway
