// Gateway statistics: every series the gateway exports at GET /metrics, declared in this
// one place, with a small hand-written Prometheus text exposition (format 0.0.4; no
// prometheus-cpp package exists on Debian 12).
//
// Series (times are seconds of the router's clock, i.e. model time; equal to real
// seconds when time_scale is 1):
//   kinference_time_to_first_token_seconds{model}      histogram, vLLM's TTFT buckets
//   kinference_inter_token_latency_seconds{model}      histogram, vLLM's ITL buckets
//   kinference_e2e_request_latency_seconds{model}      histogram, vLLM's e2e buckets
//   kinference_{prompt,cached,uncached,completion}_tokens_total{tenant,model}  counters
//       (successful requests with upstream usage)
//   Accounting (config `accounting`; accounting/, ledger/):
//   kinference_cost_usd_total{tenant,model}       counter, the cost of every usage record
//       (priced at accounting.prices; every outcome, estimated usage included)
//   kinference_cache_creation_tokens_total{tenant,model}  counter, Anthropic cache writes
//   kinference_unpriced_requests_total{model}     counter, records no price matched
//   kinference_rate_limit_rejections_total{tenant,limit}  counter, requests refused by a
//       budget or rate limit (limit: accounting::LimitName, or limits_unavailable when a
//       fail_closed tenant's limits could not be checked)
//   kinference_ledger_records_total{state}        counter, written | spooled | replayed
//   kinference_ledger_lost_records_total{reason}  counter, queue_full | spool_full |
//       spool_error | corrupt (ledger/writer.h)
//   kinference_ledger_write_failures_total        counter, store writes/reconnects failed
//   kinference_ledger_backlog_records{where}      gauge, queue | spool (not yet in the store)
//   kinference_ledger_spool_bytes                 gauge
//   kinference_ledger_store_up                    gauge, 1 when the last write succeeded
//   kinference_limits_checks_total{result}        counter, shared limiter (Redis): checked |
//       unavailable (decided by the tenant's fail_open/fail_closed)
//   kinference_limits_errors_total                counter, Redis connection/command errors
//   kinference_limits_settle_dropped_total        counter, settlements Redis did not take
//   kinference_limits_redis_up                    gauge
//   Tenant labels are bounded: the first kMaxTenantLabels distinct tenants keep their
//   name, later ones are counted as tenant "_other" (a trusted tenant header could
//   otherwise create a series per value).
//   kinference_requests_total{endpoint,strategy,outcome}                      counter
//       one per client request, by its final outcome (a retried request counts once)
//   kinference_upstream_retries_total{endpoint}   failed attempts retried elsewhere
//   kinference_endpoint_ejections_total{endpoint} passive-health ejections (outlier.h)
//   kinference_endpoint_cooling_down{endpoint}    gauge, 1 while the endpoint is skipped
//       because it answered 429/503/529 with a Retry-After (routing/router.h, Cooldown)
//   kinference_endpoint_cooldowns_total{endpoint} cooldowns started (one extended by a
//       later Retry-After counts once)
//   kinference_endpoint_metrics_stale{endpoint}   gauge, 1 while its last scrape failed
//   kinference_admission_waiting{pool}            gauge, requests in the pool's queue
//   kinference_admission_queued_total{pool}       requests that waited for room
//   kinference_admission_refused_total{pool,reason}   429s: queue_full | timeout | evicted
//   kinference_client_stalls_total                streams ended because the client stopped
//                                                 reading (backpressure stall timeout)
//   kinference_ttft_prediction_error_seconds{strategy}      predicted - observed TTFT,
//                                                           buckets symmetric around 0
//   kinference_ttft_prediction_abs_error_seconds{strategy}  |predicted - observed|
//   kinference_endpoint_healthy{endpoint}                   gauge, 1 or 0
//   kinference_policy_decisions_total{policy,outcome}       counter, per InferencePolicy:
//       matched | removed (candidates) | rejected | dry_run_would_reject
//   kinference_policy_generation                            gauge, loaded policy set
//   kinference_policy_reload_failures_total                 counter, rejected reloads
//   kinference_routing_prefix_index_total{index}            counter, routing decisions by
//       the index that matched the chosen endpoint: precise (its KV events) | approximate
//   KV-event feeds of local endpoints (upstream/kv_feeds.h), per endpoint:
//   kinference_kv_events_live{endpoint}                     gauge, 1: precise index in use
//   kinference_kv_index_blocks{endpoint}                    gauge, blocks it holds
//   kinference_kv_events_batches_total{endpoint}            counter, batches applied
//   kinference_kv_events_decode_errors_total{endpoint}      counter, payloads not decoded
//   kinference_kv_events_gaps_total{endpoint}               counter, sequence gaps seen
//   kinference_kv_events_replayed_batches_total{endpoint}   counter, recovered by replay
//   kinference_kv_events_resyncs_total{endpoint}            counter, gaps replay could not
//       fill (index cleared)
//   kinference_kv_events_publisher_restarts_total{endpoint} counter, sequence went back
//   kinference_kv_events_disconnects_total{endpoint}        counter, publisher went away
//   kinference_build_info{version,revision,build_type}      gauge, 1 (common/build_info.h;
//                                                           appended by the /metrics route)
// Bucket bounds of the first three are vLLM V1's (vllm/v1/metrics/loggers.py:
// vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds,
// vllm:e2e_request_latency_seconds), so dashboards for vLLM read ours the same way.
//
// Thread-safety: not thread-safe; the gateway uses it on its io_context thread only.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/prometheus_text.h"
#include "routing/router.h"

namespace kinference::gateway {

// Bucket upper bounds (the +Inf bucket is implicit). TTFT, ITL and e2e histograms use
// vLLM V1's bounds (common/prometheus_text.h), so gateway and engine histograms compare.
extern const std::vector<double> kPredictionErrorBuckets;     // symmetric around 0
extern const std::vector<double> kPredictionAbsErrorBuckets;  // positive half

using LabelValues = std::vector<std::string>;

struct HistogramData {
  std::vector<uint64_t> counts;  // per bound, not cumulative; last one is +Inf
  double sum = 0;
  uint64_t count = 0;
};

// One metric family: a name, help, label names and one value per label set.
class CounterFamily {
 public:
  CounterFamily(std::string name, std::string help, std::vector<std::string> labels,
                std::string type = "counter");
  void Add(const LabelValues& values, double delta);
  void Set(const LabelValues& values, double value);
  void Erase(const LabelValues& values);        // the series disappears from the exposition
  double Get(const LabelValues& values) const;  // 0 when never touched
  void Expose(std::string& out) const;

 private:
  std::string name_, help_, type_;
  std::vector<std::string> labels_;
  std::map<LabelValues, double> values_;
};

class HistogramFamily {
 public:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> labels,
                  std::vector<double> bounds);
  void Observe(const LabelValues& values, double v);
  const HistogramData* Get(const LabelValues& values) const;  // nullptr when never touched
  void Expose(std::string& out) const;

 private:
  std::string name_, help_;
  std::vector<std::string> labels_;
  std::vector<double> bounds_;
  std::map<LabelValues, HistogramData> values_;
};

// One KV-event feed's state (upstream/kv_feeds.h), for SetKvFeed.
struct KvFeedSample {
  bool live = false;
  size_t index_blocks = 0;
  uint64_t batches = 0, decode_errors = 0, gaps = 0, replayed = 0, resyncs = 0, restarts = 0,
           disconnects = 0;
};

// The ledger's and the shared limiter's state (ledger::WriterStats, RedisLimiterStats),
// for SetLedger / SetLimiter.
struct LedgerSample {
  uint64_t written = 0, spooled = 0, replayed = 0;
  uint64_t lost_queue_full = 0, lost_spool_full = 0, lost_spool_error = 0, lost_corrupt = 0;
  uint64_t write_failures = 0;
  int64_t queue_depth = 0, spool_records = 0, spool_bytes = 0;
  bool store_up = false;
};
struct LimiterSample {
  uint64_t checks = 0, unavailable = 0, settle_dropped = 0, errors = 0;
  bool up = false;
};

// Distinct tenant label values kept before the rest are counted as "_other" (our choice:
// far more tenants than one gateway serves; a bounded number of series).
inline constexpr size_t kMaxTenantLabels = 1000;

class Stats {
 public:
  Stats();
  // The tenant label value for `tenant` (see kMaxTenantLabels).
  std::string TenantLabel(const std::string& tenant);
  // One usage record's cost (nano-USD) and cache-write tokens; unpriced: no price matched.
  void RecordCost(const std::string& tenant, const std::string& model, int64_t cost_nano_usd,
                  int64_t cache_creation_tokens, bool priced);
  // A request refused by a limit ("requests", "spend_per_day", ..., "limits_unavailable").
  void RecordRateLimited(const std::string& tenant, const std::string& limit);
  void SetLedger(const LedgerSample& s);
  void SetLimiter(const LimiterSample& s);
  void RecordTtft(const std::string& model, double seconds);
  void RecordItl(const std::string& model, double seconds);
  void RecordE2e(const std::string& model, double seconds);
  // Adds prompt, cached, uncached (= prompt - cached) and completion tokens.
  void RecordUsage(const std::string& tenant, const std::string& model,
                   const routing::Usage& usage);
  // outcome: "success", "error", "cancelled", "rejected" (by an InferencePolicy; endpoint
  // "none") or "overloaded" (refused by admission control, or because every candidate
  // endpoint is cooling down; endpoint "none"). A request that reached no endpoint has
  // endpoint "none" whatever its outcome (a client gone from the queue: cancelled). Once per
  // request: a failed attempt that is retried is RecordRetry, not a request.
  void RecordRequest(const std::string& endpoint, const std::string& strategy,
                     const std::string& outcome);
  void RecordRetry(const std::string& endpoint);
  void RecordEjection(const std::string& endpoint);
  void RecordCooldown(const std::string& endpoint);
  void SetCoolingDown(const std::string& endpoint, bool cooling);
  void SetMetricsStale(const std::string& endpoint, bool stale);
  void SetAdmission(const std::string& pool, size_t waiting, uint64_t queued_total,
                    uint64_t refused_queue_full, uint64_t refused_timeout, uint64_t evicted);
  void RecordClientStall();
  void RecordTtftPrediction(const std::string& strategy, double predicted_s, double observed_s);
  void SetEndpointHealthy(const std::string& endpoint, bool healthy);
  // An endpoint left (Kubernetes mode: its Pod is gone or not Ready): its health and
  // metrics-stale gauges and its KV-event feed's series go; its counters stay.
  void RemoveEndpoint(const std::string& endpoint);
  // Sets a policy decision counter to `count` (mirrors policy::PolicyCounters).
  void SetPolicyDecisions(const std::string& policy, const std::string& outcome, double count);
  void SetPolicyGeneration(uint64_t generation);
  void RecordPolicyReloadFailure();
  void RecordPrefixIndex(bool precise);
  void SetKvFeed(const std::string& endpoint, const KvFeedSample& sample);

  // Prometheus text exposition of every series.
  std::string Exposition() const;

  const CounterFamily& requests() const { return requests_; }
  const CounterFamily& prompt_tokens() const { return prompt_tokens_; }
  const CounterFamily& cached_tokens() const { return cached_tokens_; }
  const HistogramFamily& ttft() const { return ttft_; }

 private:
  HistogramFamily ttft_, itl_, e2e_;
  CounterFamily prompt_tokens_, cached_tokens_, uncached_tokens_, completion_tokens_;
  CounterFamily requests_;
  HistogramFamily prediction_error_, prediction_abs_error_;
  CounterFamily endpoint_healthy_;
  CounterFamily retries_, ejections_, cooling_down_, cooldowns_, metrics_stale_;
  CounterFamily admission_waiting_, admission_queued_, admission_refused_, client_stalls_;
  CounterFamily policy_decisions_, policy_generation_, policy_reload_failures_;
  CounterFamily prefix_index_;
  CounterFamily cost_, cache_creation_tokens_, unpriced_, rate_limited_;
  CounterFamily ledger_records_, ledger_lost_, ledger_write_failures_, ledger_backlog_,
      ledger_spool_bytes_, ledger_store_up_;
  CounterFamily limits_checks_, limits_errors_, limits_settle_dropped_, limits_redis_up_;
  std::set<std::string> tenant_labels_;
  CounterFamily kv_live_, kv_blocks_, kv_batches_, kv_decode_errors_, kv_gaps_, kv_replayed_,
      kv_resyncs_, kv_restarts_, kv_disconnects_;
};

// Label values are escaped with kinference::EscapeLabelValue (common/prometheus_text.h).
using kinference::EscapeLabelValue;

}  // namespace kinference::gateway
