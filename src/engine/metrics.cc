#include "engine/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/prometheus_text.h"

namespace kinference::engine {
namespace {

// A number the way Python's prometheus_client writes it: shortest round-trip repr, with
// ".0" on integral values ("3.0", "0.001", "2560.0", "+Inf").
std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

class Writer {
 public:
  Writer(const std::string& model, const std::string& engine)
      : labels_("model_name=\"" + EscapeLabelValue(model) + "\",engine=\"" +
                EscapeLabelValue(engine) + "\"") {}

  void Header(const std::string& name, const char* type, const char* help) {
    out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void Sample(const std::string& name, double v, const std::string& extra = "") {
    out_ += name + "{" + labels_ + extra + "} " + Num(v) + "\n";
  }
  void Gauge(const std::string& name, const char* help, double v) {
    Header(name, "gauge", help);
    Sample(name, v);
  }
  // `base`_total, then its `base`_created gauge.
  void Counter(const std::string& base, const char* help, double v, double created) {
    Header(base + "_total", "counter", help);
    Sample(base + "_total", v);
    Created(base, help, {""}, created);
  }
  // The `base`_created gauge, one sample per extra label set.
  void Created(const std::string& base, const char* help, const std::vector<std::string>& extras,
               double created) {
    Header(base + "_created", "gauge", help);
    for (const auto& extra : extras) Sample(base + "_created", created, extra);
  }
  void Hist(const std::string& name, const char* help, const Histogram& h) {
    Header(name, "histogram", help);
    uint64_t cum = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cum += i < h.counts.size() ? h.counts[i] : 0;
      Sample(name + "_bucket", static_cast<double>(cum), ",le=\"" + Num(h.bounds[i]) + "\"");
    }
    Sample(name + "_bucket", static_cast<double>(h.count), ",le=\"+Inf\"");
    Sample(name + "_count", static_cast<double>(h.count));
    Sample(name + "_sum", h.sum);
  }
  void Hist(const std::string& name, const char* help, const Histogram& h, double created) {
    Hist(name, help, h);
    Created(name, help, {""}, created);
  }
  std::string& out() { return out_; }

 private:
  std::string labels_;
  std::string out_;
};

}  // namespace

Histogram::Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}

void Histogram::Observe(double v) {
  // Prometheus buckets are inclusive upper bounds (le).
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();
  if (counts.size() != bounds.size() + 1) counts.resize(bounds.size() + 1, 0);
  ++counts[i];
  sum += v;
  ++count;
}

EngineMetrics::EngineMetrics()
    : time_to_first_token_seconds(kVllmTtftBuckets),
      inter_token_latency_seconds(kVllmItlBuckets),
      e2e_request_latency_seconds(kVllmRequestLatencyBuckets),
      request_queue_time_seconds(kVllmRequestLatencyBuckets) {}

std::string RenderPrometheus(const EngineMetrics& m, const HardwareProfile& profile,
                             const std::string& model_name, const std::string& engine_label) {
  Writer w(model_name, engine_label);
  // Help texts as vLLM V1 writes them (vllm/v1/metrics/loggers.py).
  w.Gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
          m.num_requests_running);
  w.Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
          m.num_requests_waiting);
  w.Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
          m.kv_cache_usage_perc);
  const double t0 = m.created_unix_s;
  w.Counter("vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            static_cast<double>(m.prefix_cache_queries_total), t0);
  w.Counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
            static_cast<double>(m.prefix_cache_hits_total), t0);
  w.Counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
            static_cast<double>(m.num_preemptions_total), t0);
  w.Counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
            static_cast<double>(m.prompt_tokens_total), t0);
  w.Counter("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external).",
            static_cast<double>(m.prompt_tokens_cached_total), t0);
  w.Counter("vllm:generation_tokens", "Number of generation tokens processed.",
            static_cast<double>(m.generation_tokens_total), t0);
  const char* success_help = "Count of successfully processed requests.";
  w.Header("vllm:request_success_total", "counter", success_help);
  const std::pair<const char*, uint64_t> reasons[] = {{"stop", m.request_success_stop},
                                                      {"length", m.request_success_length},
                                                      {"abort", m.request_success_abort},
                                                      {"error", 0},
                                                      {"repetition", 0}};
  std::vector<std::string> reason_labels;
  for (const auto& [reason, n] : reasons) {
    reason_labels.push_back(std::string(",finished_reason=\"") + reason + "\"");
    w.Sample("vllm:request_success_total", static_cast<double>(n), reason_labels.back());
  }
  w.Created("vllm:request_success", success_help, reason_labels, t0);
  w.Hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
         m.time_to_first_token_seconds, t0);
  w.Hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
         m.inter_token_latency_seconds, t0);
  w.Hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
         m.e2e_request_latency_seconds, t0);
  w.Hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
         m.request_queue_time_seconds, t0);
  // vLLM's CacheConfig info gauge: value 1, the configuration in labels, and (unlike the
  // other series) no model_name label.
  w.Header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  std::string& out = w.out();
  out += "vllm:cache_config_info{block_size=\"" + std::to_string(profile.block_size) +
         "\",enable_prefix_caching=\"True\",engine=\"" + EscapeLabelValue(engine_label) +
         "\",num_gpu_blocks=\"" + std::to_string(profile.num_gpu_blocks) + "\"} 1.0\n";
  return std::move(out);
}

}  // namespace kinference::engine
