// Prometheus text exposition pieces shared by every /metrics we serve (engine-sim's vLLM
// metrics, the gateway's own): vLLM V1's histogram bucket bounds and label escaping.
//
// Bucket bounds are vLLM V1's (vllm/v1/metrics/loggers.py, PrometheusStatLogger), in
// seconds, ascending, +Inf implied. Escaping follows the text format: backslash, double
// quote and newline in label values are escaped.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <string>
#include <vector>

namespace kinference {

// vllm:time_to_first_token_seconds.
extern const std::vector<double> kVllmTtftBuckets;
// vllm:inter_token_latency_seconds.
extern const std::vector<double> kVllmItlBuckets;
// vLLM's `request_latency_buckets`: e2e, queue, inference, prefill and decode time.
extern const std::vector<double> kVllmRequestLatencyBuckets;

// A label value escaped for the text format.
std::string EscapeLabelValue(const std::string& v);

}  // namespace kinference
