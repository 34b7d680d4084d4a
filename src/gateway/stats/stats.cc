#include "gateway/stats/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/prometheus_text.h"

namespace kinference::gateway {

// Ours: TTFT-scale magnitudes (1 ms .. 10 s), mirrored around 0.
const std::vector<double> kPredictionAbsErrorBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                        0.25,  0.5,   1.0,  2.5,   5.0,  10.0};
const std::vector<double> kPredictionErrorBuckets = [] {
  std::vector<double> b;
  for (auto it = kPredictionAbsErrorBuckets.rbegin(); it != kPredictionAbsErrorBuckets.rend(); ++it)
    b.push_back(-*it);
  b.push_back(0.0);
  b.insert(b.end(), kPredictionAbsErrorBuckets.begin(), kPredictionAbsErrorBuckets.end());
  return b;
}();

namespace {

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return fmt::format("{}", v);
}

std::string LabelSet(const std::vector<std::string>& names, const LabelValues& values,
                     const std::string& extra = {}) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!out.empty()) out += ',';
    out += names[i] + "=\"" + EscapeLabelValue(i < values.size() ? values[i] : "") + "\"";
  }
  if (!extra.empty()) {
    if (!out.empty()) out += ',';
    out += extra;
  }
  return out.empty() ? out : "{" + out + "}";
}

void Header(std::string& out, const std::string& name, const std::string& help,
            const std::string& type) {
  out += "# HELP " + name + " " + help + "\n";
  out += "# TYPE " + name + " " + type + "\n";
}

}  // namespace

CounterFamily::CounterFamily(std::string name, std::string help, std::vector<std::string> labels,
                             std::string type)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(std::move(type)),
      labels_(std::move(labels)) {}

void CounterFamily::Add(const LabelValues& values, double delta) { values_[values] += delta; }
void CounterFamily::Set(const LabelValues& values, double value) { values_[values] = value; }
void CounterFamily::Erase(const LabelValues& values) { values_.erase(values); }
double CounterFamily::Get(const LabelValues& values) const {
  auto it = values_.find(values);
  return it == values_.end() ? 0 : it->second;
}

void CounterFamily::Expose(std::string& out) const {
  Header(out, name_, help_, type_);
  for (const auto& [labels, v] : values_)
    out += name_ + LabelSet(labels_, labels) + " " + Num(v) + "\n";
}

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> labels, std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      bounds_(std::move(bounds)) {}

void HistogramFamily::Observe(const LabelValues& values, double v) {
  HistogramData& h = values_[values];
  if (h.counts.empty()) h.counts.assign(bounds_.size() + 1, 0);
  // Prometheus buckets are upper-inclusive: v lands in the first bound >= v.
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  ++h.counts[i];
  h.sum += v;
  ++h.count;
}

const HistogramData* HistogramFamily::Get(const LabelValues& values) const {
  auto it = values_.find(values);
  return it == values_.end() ? nullptr : &it->second;
}

void HistogramFamily::Expose(std::string& out) const {
  Header(out, name_, help_, "histogram");
  for (const auto& [labels, h] : values_) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += h.counts[i];
      double le = i < bounds_.size() ? bounds_[i] : INFINITY;
      out += name_ + "_bucket" + LabelSet(labels_, labels, "le=\"" + Num(le) + "\"") + " " +
             std::to_string(cumulative) + "\n";
    }
    out += name_ + "_sum" + LabelSet(labels_, labels) + " " + Num(h.sum) + "\n";
    out += name_ + "_count" + LabelSet(labels_, labels) + " " + std::to_string(h.count) + "\n";
  }
}

Stats::Stats()
    : ttft_("kinference_time_to_first_token_seconds",
            "Time from request arrival at the gateway to the first content token.", {"model"},
            kVllmTtftBuckets),
      itl_("kinference_inter_token_latency_seconds",
           "Time between consecutive content chunks of a streamed response.", {"model"},
           kVllmItlBuckets),
      e2e_("kinference_e2e_request_latency_seconds",
           "Time from request arrival at the gateway to the end of its response.", {"model"},
           kVllmRequestLatencyBuckets),
      prompt_tokens_("kinference_prompt_tokens_total", "Prompt tokens (upstream usage).",
                     {"tenant", "model"}),
      cached_tokens_("kinference_cached_tokens_total",
                     "Prompt tokens served from the prefix cache (usage.prompt_tokens_details).",
                     {"tenant", "model"}),
      uncached_tokens_("kinference_uncached_tokens_total",
                       "Prompt tokens that had to be prefilled (prompt - cached).",
                       {"tenant", "model"}),
      completion_tokens_("kinference_completion_tokens_total", "Completion tokens.",
                         {"tenant", "model"}),
      requests_("kinference_requests_total", "Routed requests by endpoint, strategy, outcome.",
                {"endpoint", "strategy", "outcome"}),
      prediction_error_("kinference_ttft_prediction_error_seconds",
                        "Predicted minus observed TTFT of the chosen endpoint.", {"strategy"},
                        kPredictionErrorBuckets),
      prediction_abs_error_("kinference_ttft_prediction_abs_error_seconds",
                            "Absolute difference of predicted and observed TTFT.", {"strategy"},
                            kPredictionAbsErrorBuckets),
      endpoint_healthy_("kinference_endpoint_healthy",
                        "1 when the endpoint may take requests, 0 while it is ejected "
                        "(passive health) or its provider's circuit breaker is open.",
                        {"endpoint"}, "gauge"),
      retries_("kinference_upstream_retries_total",
               "Failed upstream attempts (before the first body byte) retried elsewhere.",
               {"endpoint"}),
      ejections_("kinference_endpoint_ejections_total",
                 "Passive-health ejections (connect failure, reset, 5xx).", {"endpoint"}),
      cooling_down_("kinference_endpoint_cooling_down",
                    "1 while the endpoint is skipped because it answered 429, 503 or 529 with "
                    "a Retry-After (cooldown), else 0.",
                    {"endpoint"}, "gauge"),
      cooldowns_("kinference_endpoint_cooldowns_total",
                 "Cooldowns started: the endpoint answered 429, 503 or 529 with a Retry-After "
                 "and was skipped until it passed.",
                 {"endpoint"}),
      metrics_stale_("kinference_endpoint_metrics_stale",
                     "1 while the endpoint's last /metrics scrape failed (routing falls back "
                     "to the gateway's own bookkeeping).",
                     {"endpoint"}, "gauge"),
      admission_waiting_("kinference_admission_waiting",
                         "Requests waiting in the pool's admission queue.", {"pool"}, "gauge"),
      admission_queued_("kinference_admission_queued_total",
                        "Requests that waited in the pool's admission queue.", {"pool"}),
      admission_refused_("kinference_admission_refused_total",
                         "Requests refused by admission control (429) by reason.",
                         {"pool", "reason"}),
      client_stalls_("kinference_client_stalls_total",
                     "Streams ended because the client stopped reading.", {}),
      policy_decisions_("kinference_policy_decisions_total",
                        "InferencePolicy decisions by policy and outcome (matched, removed "
                        "candidates, rejected, dry_run_would_reject).",
                        {"policy", "outcome"}),
      policy_generation_("kinference_policy_generation",
                         "Generation of the loaded policy set (0: none loaded).", {}, "gauge"),
      policy_reload_failures_("kinference_policy_reload_failures_total",
                              "Policy reloads rejected (the last valid set stayed).", {}),
      prefix_index_("kinference_routing_prefix_index_total",
                    "Routing decisions by the prefix index that matched the chosen endpoint: "
                    "precise (its vLLM KV events) or approximate.",
                    {"index"}),
      cost_("kinference_cost_usd_total",
            "Cost of the requests recorded in the usage ledger, USD (accounting.prices).",
            {"tenant", "model"}),
      cache_creation_tokens_("kinference_cache_creation_tokens_total",
                             "Prompt tokens written to a prompt cache (Anthropic).",
                             {"tenant", "model"}),
      unpriced_("kinference_unpriced_requests_total", "Usage records no price matched (cost 0).",
                {"model"}),
      rate_limited_("kinference_rate_limit_rejections_total",
                    "Requests refused by a tenant's budget or rate limit, by limit.",
                    {"tenant", "limit"}),
      ledger_records_("kinference_ledger_records_total",
                      "Usage records written to the store, appended to the spool, or moved "
                      "from the spool to the store.",
                      {"state"}),
      ledger_lost_("kinference_ledger_lost_records_total", "Usage records lost, by reason.",
                   {"reason"}),
      ledger_write_failures_("kinference_ledger_write_failures_total",
                             "Ledger store writes or reconnects that failed.", {}),
      ledger_backlog_("kinference_ledger_backlog_records",
                      "Usage records not yet in the store: in the writer's queue, in the "
                      "on-disk spool.",
                      {"where"}, "gauge"),
      ledger_spool_bytes_("kinference_ledger_spool_bytes", "Bytes in the ledger's spool.", {},
                          "gauge"),
      ledger_store_up_("kinference_ledger_store_up",
                       "1 when the ledger store took the last write, 0 while records spool.", {},
                       "gauge"),
      limits_checks_("kinference_limits_checks_total",
                     "Shared (Redis) limit checks: checked by Redis, or unavailable (decided "
                     "by the tenant's fail_open / fail_closed).",
                     {"result"}),
      limits_errors_("kinference_limits_errors_total",
                     "Redis connection or command failures of the shared limiter.", {}),
      limits_settle_dropped_("kinference_limits_settle_dropped_total",
                             "Settlements the shared limiter could not deliver to Redis.", {}),
      limits_redis_up_("kinference_limits_redis_up", "1 while the shared limiter reaches Redis.",
                       {}, "gauge"),
      kv_live_("kinference_kv_events_live",
               "1 while the endpoint's KV-event feed is live and its precise index is used.",
               {"endpoint"}, "gauge"),
      kv_blocks_("kinference_kv_index_blocks",
                 "Blocks the endpoint's precise (KV-event) prefix index holds.", {"endpoint"},
                 "gauge"),
      kv_batches_("kinference_kv_events_batches_total", "KV-event batches applied.", {"endpoint"}),
      kv_decode_errors_("kinference_kv_events_decode_errors_total",
                        "KV-event payloads that did not decode (index cleared).", {"endpoint"}),
      kv_gaps_("kinference_kv_events_gaps_total", "KV-event sequence gaps seen.", {"endpoint"}),
      kv_replayed_("kinference_kv_events_replayed_batches_total",
                   "KV-event batches recovered from the replay socket.", {"endpoint"}),
      kv_resyncs_("kinference_kv_events_resyncs_total",
                  "KV-event gaps the replay could not fill (index cleared).", {"endpoint"}),
      kv_restarts_("kinference_kv_events_publisher_restarts_total",
                   "KV-event publisher restarts seen (sequence went back; index cleared).",
                   {"endpoint"}),
      kv_disconnects_("kinference_kv_events_disconnects_total",
                      "KV-event publisher disconnections (index cleared).", {"endpoint"}) {
  policy_generation_.Set({}, 0);
  policy_reload_failures_.Set({}, 0);
  client_stalls_.Set({}, 0);
}

void Stats::RecordTtft(const std::string& model, double s) { ttft_.Observe({model}, s); }
void Stats::RecordItl(const std::string& model, double s) { itl_.Observe({model}, s); }
void Stats::RecordE2e(const std::string& model, double s) { e2e_.Observe({model}, s); }

std::string Stats::TenantLabel(const std::string& tenant) {
  if (tenant_labels_.count(tenant)) return tenant;
  if (tenant_labels_.size() >= kMaxTenantLabels) return "_other";
  tenant_labels_.insert(tenant);
  return tenant;
}

void Stats::RecordCost(const std::string& tenant, const std::string& model, int64_t cost_nano_usd,
                       int64_t cache_creation_tokens, bool priced) {
  const std::string t = TenantLabel(tenant);
  cost_.Add({t, model}, static_cast<double>(cost_nano_usd) / 1e9);
  if (cache_creation_tokens > 0)
    cache_creation_tokens_.Add({t, model}, static_cast<double>(cache_creation_tokens));
  if (!priced) unpriced_.Add({model}, 1);
}

void Stats::RecordRateLimited(const std::string& tenant, const std::string& limit) {
  rate_limited_.Add({TenantLabel(tenant), limit}, 1);
}

void Stats::SetLedger(const LedgerSample& s) {
  ledger_records_.Set({"written"}, static_cast<double>(s.written));
  ledger_records_.Set({"spooled"}, static_cast<double>(s.spooled));
  ledger_records_.Set({"replayed"}, static_cast<double>(s.replayed));
  ledger_lost_.Set({"queue_full"}, static_cast<double>(s.lost_queue_full));
  ledger_lost_.Set({"spool_full"}, static_cast<double>(s.lost_spool_full));
  ledger_lost_.Set({"spool_error"}, static_cast<double>(s.lost_spool_error));
  ledger_lost_.Set({"corrupt"}, static_cast<double>(s.lost_corrupt));
  ledger_write_failures_.Set({}, static_cast<double>(s.write_failures));
  ledger_backlog_.Set({"queue"}, static_cast<double>(s.queue_depth));
  ledger_backlog_.Set({"spool"}, static_cast<double>(s.spool_records));
  ledger_spool_bytes_.Set({}, static_cast<double>(s.spool_bytes));
  ledger_store_up_.Set({}, s.store_up ? 1 : 0);
}

void Stats::SetLimiter(const LimiterSample& s) {
  limits_checks_.Set({"checked"}, static_cast<double>(s.checks));
  limits_checks_.Set({"unavailable"}, static_cast<double>(s.unavailable));
  limits_errors_.Set({}, static_cast<double>(s.errors));
  limits_settle_dropped_.Set({}, static_cast<double>(s.settle_dropped));
  limits_redis_up_.Set({}, s.up ? 1 : 0);
}

void Stats::RecordUsage(const std::string& raw_tenant, const std::string& model,
                        const routing::Usage& u) {
  const std::string tenant = TenantLabel(raw_tenant);
  prompt_tokens_.Add({tenant, model}, u.prompt_tokens);
  cached_tokens_.Add({tenant, model}, u.cached_tokens);
  uncached_tokens_.Add({tenant, model}, std::max(0, u.prompt_tokens - u.cached_tokens));
  completion_tokens_.Add({tenant, model}, u.completion_tokens);
}

void Stats::RecordRequest(const std::string& endpoint, const std::string& strategy,
                          const std::string& outcome) {
  requests_.Add({endpoint, strategy, outcome}, 1);
}

void Stats::RecordRetry(const std::string& endpoint) { retries_.Add({endpoint}, 1); }
void Stats::RecordEjection(const std::string& endpoint) { ejections_.Add({endpoint}, 1); }
void Stats::RecordCooldown(const std::string& endpoint) { cooldowns_.Add({endpoint}, 1); }
void Stats::SetCoolingDown(const std::string& endpoint, bool cooling) {
  cooling_down_.Set({endpoint}, cooling ? 1 : 0);
}
void Stats::SetMetricsStale(const std::string& endpoint, bool stale) {
  metrics_stale_.Set({endpoint}, stale ? 1 : 0);
}
void Stats::SetAdmission(const std::string& pool, size_t waiting, uint64_t queued_total,
                         uint64_t refused_queue_full, uint64_t refused_timeout, uint64_t evicted) {
  admission_waiting_.Set({pool}, static_cast<double>(waiting));
  admission_queued_.Set({pool}, static_cast<double>(queued_total));
  admission_refused_.Set({pool, "queue_full"}, static_cast<double>(refused_queue_full));
  admission_refused_.Set({pool, "timeout"}, static_cast<double>(refused_timeout));
  admission_refused_.Set({pool, "evicted"}, static_cast<double>(evicted));
}
void Stats::RecordClientStall() { client_stalls_.Add({}, 1); }

void Stats::RecordTtftPrediction(const std::string& strategy, double predicted_s,
                                 double observed_s) {
  double err = predicted_s - observed_s;
  prediction_error_.Observe({strategy}, err);
  prediction_abs_error_.Observe({strategy}, std::abs(err));
}

void Stats::SetEndpointHealthy(const std::string& endpoint, bool healthy) {
  endpoint_healthy_.Set({endpoint}, healthy ? 1 : 0);
}

void Stats::RemoveEndpoint(const std::string& endpoint) {
  // Its gauges and its KV feed's series (mirrors of a feed that is gone); its request,
  // retry and ejection counters stay (they counted what happened).
  for (CounterFamily* f : {&endpoint_healthy_, &metrics_stale_, &cooling_down_, &kv_live_,
                           &kv_blocks_, &kv_batches_, &kv_decode_errors_, &kv_gaps_, &kv_replayed_,
                           &kv_resyncs_, &kv_restarts_, &kv_disconnects_})
    f->Erase({endpoint});
}

void Stats::SetPolicyDecisions(const std::string& policy, const std::string& outcome,
                               double count) {
  policy_decisions_.Set({policy, outcome}, count);
}

void Stats::SetPolicyGeneration(uint64_t generation) {
  policy_generation_.Set({}, static_cast<double>(generation));
}

void Stats::RecordPolicyReloadFailure() { policy_reload_failures_.Add({}, 1); }

void Stats::RecordPrefixIndex(bool precise) {
  prefix_index_.Add({precise ? "precise" : "approximate"}, 1);
}

void Stats::SetKvFeed(const std::string& endpoint, const KvFeedSample& s) {
  kv_live_.Set({endpoint}, s.live ? 1 : 0);
  kv_blocks_.Set({endpoint}, static_cast<double>(s.index_blocks));
  kv_batches_.Set({endpoint}, static_cast<double>(s.batches));
  kv_decode_errors_.Set({endpoint}, static_cast<double>(s.decode_errors));
  kv_gaps_.Set({endpoint}, static_cast<double>(s.gaps));
  kv_replayed_.Set({endpoint}, static_cast<double>(s.replayed));
  kv_resyncs_.Set({endpoint}, static_cast<double>(s.resyncs));
  kv_restarts_.Set({endpoint}, static_cast<double>(s.restarts));
  kv_disconnects_.Set({endpoint}, static_cast<double>(s.disconnects));
}

std::string Stats::Exposition() const {
  std::string out;
  ttft_.Expose(out);
  itl_.Expose(out);
  e2e_.Expose(out);
  prompt_tokens_.Expose(out);
  cached_tokens_.Expose(out);
  uncached_tokens_.Expose(out);
  completion_tokens_.Expose(out);
  requests_.Expose(out);
  prediction_error_.Expose(out);
  prediction_abs_error_.Expose(out);
  endpoint_healthy_.Expose(out);
  retries_.Expose(out);
  ejections_.Expose(out);
  cooling_down_.Expose(out);
  cooldowns_.Expose(out);
  metrics_stale_.Expose(out);
  admission_waiting_.Expose(out);
  admission_queued_.Expose(out);
  admission_refused_.Expose(out);
  client_stalls_.Expose(out);
  policy_decisions_.Expose(out);
  policy_generation_.Expose(out);
  policy_reload_failures_.Expose(out);
  prefix_index_.Expose(out);
  for (const CounterFamily* f :
       {&cost_, &cache_creation_tokens_, &unpriced_, &rate_limited_, &ledger_records_,
        &ledger_lost_, &ledger_write_failures_, &ledger_backlog_, &ledger_spool_bytes_,
        &ledger_store_up_, &limits_checks_, &limits_errors_, &limits_settle_dropped_,
        &limits_redis_up_})
    f->Expose(out);
  for (const CounterFamily* f :
       {&kv_live_, &kv_blocks_, &kv_batches_, &kv_decode_errors_, &kv_gaps_, &kv_replayed_,
        &kv_resyncs_, &kv_restarts_, &kv_disconnects_})
    f->Expose(out);
  return out;
}

}  // namespace kinference::gateway
