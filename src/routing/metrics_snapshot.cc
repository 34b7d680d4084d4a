// Prometheus text exposition format parser (format reference:
// https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format).
#include "routing/metrics_snapshot.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace kinference::routing {
namespace {

struct Sample {
  std::string_view name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

bool IsNameStart(char c) {
  // ASCII letters (Prometheus metric names are ASCII), without the locale-aware call.
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

void SkipSpaces(std::string_view s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

bool ParseValue(std::string_view tok, double& out) {
  if (tok == "+Inf" || tok == "Inf" || tok == "inf" || tok == "+inf") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (tok == "-Inf" || tok == "-inf") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (tok == "NaN" || tok == "nan") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (!tok.empty() && tok[0] == '+') tok.remove_prefix(1);
  if (tok.empty()) return false;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  return ec == std::errc() && p == tok.data() + tok.size();
}

// Parses one sample line; returns false when malformed.
bool ParseSampleLine(std::string_view line, Sample& s) {
  size_t i = 0;
  SkipSpaces(line, i);
  size_t start = i;
  if (i >= line.size() || !IsNameStart(line[i])) return false;
  while (i < line.size() && IsNameChar(line[i])) ++i;
  s.name = line.substr(start, i - start);
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      SkipSpaces(line, i);
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      size_t ls = i;
      if (i >= line.size() || !IsNameStart(line[i])) return false;
      while (i < line.size() && IsNameChar(line[i])) ++i;
      std::string key(line.substr(ls, i - ls));
      SkipSpaces(line, i);
      if (i >= line.size() || line[i] != '=') return false;
      ++i;
      SkipSpaces(line, i);
      if (i >= line.size() || line[i] != '"') return false;
      ++i;
      std::string val;
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '\\') {
          if (i >= line.size()) return false;
          char e = line[i++];
          if (e == 'n')
            val.push_back('\n');
          else if (e == '\\' || e == '"')
            val.push_back(e);
          else
            return false;
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          val.push_back(c);
        }
      }
      if (!closed) return false;
      s.labels.emplace_back(std::move(key), std::move(val));
      SkipSpaces(line, i);
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      return false;
    }
  }
  // Value, then an optional integer timestamp (milliseconds), nothing else.
  if (i >= line.size() || (line[i] != ' ' && line[i] != '\t')) return false;
  SkipSpaces(line, i);
  size_t vs = i;
  while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
  if (!ParseValue(line.substr(vs, i - vs), s.value)) return false;
  SkipSpaces(line, i);
  if (i < line.size()) {
    size_t ts = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    int64_t stamp = 0;
    std::string_view t = line.substr(ts, i - ts);
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), stamp);
    if (ec != std::errc() || p != t.data() + t.size()) return false;
    SkipSpaces(line, i);
    if (i < line.size()) return false;
  }
  return true;
}

const std::string* Label(const Sample& s, std::string_view key) {
  for (const auto& [k, v] : s.labels)
    if (k == key) return &v;
  return nullptr;
}

std::optional<int> ParseIntLabel(const std::string* v) {
  if (v == nullptr) return std::nullopt;
  int out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size()) return std::nullopt;
  return out;
}

void Add(std::optional<double>& field, double v) { field = field.value_or(0.0) + v; }

}  // namespace

Result<MetricsSnapshot> ParsePrometheusText(std::string_view text, std::string_view model_name) {
  MetricsSnapshot snap;
  double kv_usage_sum = 0;
  int kv_usage_n = 0;
  // vLLM V0 called the KV usage gauge vllm:gpu_cache_usage_perc; used only as a fallback.
  double v0_kv_sum = 0;
  int v0_kv_n = 0;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    SkipSpaces(line, i);
    if (i == line.size() || line[i] == '#') continue;  // blank, comment, HELP, TYPE
    Sample s;
    if (!ParseSampleLine(line, s)) {
      return Status(ErrorCode::kInvalidArgument, "malformed Prometheus line " +
                                                     std::to_string(line_no) + ": " +
                                                     std::string(line.substr(0, 120)));
    }
    if (!s.name.starts_with("vllm:")) continue;
    if (!model_name.empty()) {
      const std::string* m = Label(s, "model_name");
      if (m != nullptr && *m != model_name) continue;
    }
    std::string_view n = s.name.substr(5);
    double v = s.value;
    if (n == "num_requests_running")
      Add(snap.num_requests_running, v);
    else if (n == "num_requests_waiting")
      Add(snap.num_requests_waiting, v);
    else if (n == "kv_cache_usage_perc") {
      kv_usage_sum += v;
      ++kv_usage_n;
    } else if (n == "gpu_cache_usage_perc") {
      v0_kv_sum += v;
      ++v0_kv_n;
    } else if (n == "prefix_cache_queries_total")
      Add(snap.prefix_cache_queries_total, v);
    else if (n == "prefix_cache_hits_total")
      Add(snap.prefix_cache_hits_total, v);
    else if (n == "prompt_tokens_total")
      Add(snap.prompt_tokens_total, v);
    else if (n == "generation_tokens_total")
      Add(snap.generation_tokens_total, v);
    else if (n == "num_preemptions_total")
      Add(snap.num_preemptions_total, v);
    else if (n == "time_to_first_token_seconds_sum")
      Add(snap.ttft_seconds_sum, v);
    else if (n == "time_to_first_token_seconds_count")
      Add(snap.ttft_seconds_count, v);
    else if (n == "cache_config_info") {
      // An info gauge: the configuration is in the labels (value is 1). With several
      // engines (data parallel) their blocks add up; block_size is the same for all.
      if (auto bs = ParseIntLabel(Label(s, "block_size"))) snap.block_size = *bs;
      if (auto nb = ParseIntLabel(Label(s, "num_gpu_blocks")))
        snap.num_gpu_blocks = snap.num_gpu_blocks.value_or(0) + *nb;
    }
  }
  // A utilisation fraction is averaged across label sets (engines), not summed.
  if (kv_usage_n > 0)
    snap.kv_cache_usage_perc = kv_usage_sum / kv_usage_n;
  else if (v0_kv_n > 0)
    snap.kv_cache_usage_perc = v0_kv_sum / v0_kv_n;
  return snap;
}

}  // namespace kinference::routing
