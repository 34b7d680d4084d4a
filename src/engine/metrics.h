// EngineMetrics: what a vLLM V1 engine exposes on /metrics, as plain data, and its
// rendering in Prometheus text exposition format under vLLM's names.
//
// Names, labels (`model_name`, `engine`) and histogram buckets follow vLLM V1
// (vllm/v1/metrics/loggers.py, PrometheusStatLogger). Counters are totals since start.
//
// Thread-safety: plain data; RenderPrometheus is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/profile.h"

namespace kinference::engine {

// A cumulative Prometheus histogram with fixed upper bounds (seconds).
struct Histogram {
  std::vector<double> bounds;    // ascending upper bounds, +Inf implied
  std::vector<uint64_t> counts;  // per bucket (not cumulative), size bounds.size() + 1
  double sum = 0;
  uint64_t count = 0;
  explicit Histogram(std::vector<double> b = {});
  void Observe(double v);
};

struct EngineMetrics {
  // Gauges.
  int num_requests_running = 0;
  int num_requests_waiting = 0;
  double kv_cache_usage_perc = 0;  // 0..1, as vLLM V1 reports it
  // Counters.
  uint64_t prefix_cache_queries_total = 0;  // tokens queried
  uint64_t prefix_cache_hits_total = 0;     // tokens hit
  uint64_t prompt_tokens_total = 0;
  uint64_t prompt_tokens_cached_total = 0;  // prompt tokens found in the prefix cache
  uint64_t generation_tokens_total = 0;
  uint64_t num_preemptions_total = 0;
  uint64_t request_success_total = 0;  // all finished requests (sum of the three below)
  // vllm:request_success_total by finished_reason label ("stop", "length", "abort").
  uint64_t request_success_stop = 0;
  uint64_t request_success_length = 0;
  uint64_t request_success_abort = 0;
  // Histograms (seconds), vLLM's bucket bounds.
  Histogram time_to_first_token_seconds;
  Histogram inter_token_latency_seconds;
  Histogram e2e_request_latency_seconds;
  Histogram request_queue_time_seconds;
  // Unix time (seconds) the counters and histograms started from: Python's
  // prometheus_client writes it as a `<name>_created` gauge next to each (vLLM does).
  double created_unix_s = 0;
  EngineMetrics();
};

// Prometheus text for `m`, every series labelled model_name=<model_name>,
// engine=<engine_label>; includes vllm:cache_config_info with block_size and
// num_gpu_blocks from the profile (labelled engine but not model_name, as vLLM does). As
// vLLM 0.32 writes it: a counter's TYPE line names
// `<name>_total`; each counter and histogram is followed by its `<name>_created` gauge
// (m.created_unix_s); request_success_total has finished_reason stop, length, abort,
// error and repetition (engine-sim never counts the last two).
std::string RenderPrometheus(const EngineMetrics& m, const HardwareProfile& profile,
                             const std::string& model_name, const std::string& engine_label);

}  // namespace kinference::engine
