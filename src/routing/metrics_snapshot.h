// MetricsSnapshot: the parts of a vLLM /metrics scrape the router uses, and the parser
// from Prometheus text exposition format.
//
// Series are read under vLLM V1 names (vllm:num_requests_running, ...); when a scrape
// holds several `model_name` label values, the parser can be asked for one. Missing
// series stay unset (std::nullopt) rather than zero, so the router can tell "idle"
// from "unknown".
//
// Thread-safety: plain data; the parser is a pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kinference::routing {

struct MetricsSnapshot {
  std::optional<double> num_requests_running;
  std::optional<double> num_requests_waiting;
  std::optional<double> kv_cache_usage_perc;  // 0..1
  std::optional<double> prefix_cache_queries_total;
  std::optional<double> prefix_cache_hits_total;
  std::optional<double> prompt_tokens_total;
  std::optional<double> generation_tokens_total;
  std::optional<double> num_preemptions_total;
  std::optional<double> ttft_seconds_sum;    // vllm:time_to_first_token_seconds_sum
  std::optional<double> ttft_seconds_count;  // vllm:time_to_first_token_seconds_count
  // From vllm:cache_config_info labels.
  std::optional<int> block_size;
  std::optional<int> num_gpu_blocks;
};

// Parses Prometheus text format. `model_name` empty: accept any model_name label
// (summing across label sets). Errors: kInvalidArgument for malformed lines.
// Details: series without a model_name label (vllm:cache_config_info has none) are
// always accepted; kv_cache_usage_perc is averaged across label sets, not summed (V0's
// vllm:gpu_cache_usage_perc is read when the V1 name is absent); num_gpu_blocks adds up
// across engines; histogram buckets, non-vllm series and unknown names are skipped;
// optional timestamps are accepted and ignored.
Result<MetricsSnapshot> ParsePrometheusText(std::string_view text,
                                            std::string_view model_name = "");

}  // namespace kinference::routing
