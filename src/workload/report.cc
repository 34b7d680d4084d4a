#include "workload/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace kinference::workload {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

boost::json::value Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

double GetNum(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return kNaN;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  return kNaN;
}

std::string GetStr(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::string RowLabel(const boost::json::object& o) {
  std::string label = GetStr(o, "label");
  return label.empty() ? GetStr(o, "workload") : label;
}

// Seconds with a unit that keeps 3 significant figures readable.
std::string FmtSeconds(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 1.0) return fmt::format("{:.0f}ms", s * 1000);
  return fmt::format("{:.2f}s", s);
}

std::string FmtRatio(double num, double den) {
  if (!std::isfinite(num) || !std::isfinite(den) || den <= 0) return "-";
  return fmt::format("{:.2f}x", num / den);
}

}  // namespace

namespace {

// Percentiles of `v` at qs (ascending), equal to Percentile(v, q) for each: the closest
// ranks are selected in place (nth_element, each on what is right of the previous rank)
// rather than the whole sample sorted; the ITL sample has one value per output token
// (25 M in the 64-replica x 100,000-request run), and sorting it was 4% of the run.
std::vector<double> PercentilesInPlace(std::vector<double>& v, std::initializer_list<double> qs) {
  std::vector<double> out;
  if (v.empty()) {
    out.assign(qs.size(), kNaN);
    return out;
  }
  // After selecting rank r, v[r] holds its sorted value and v[r+1..) the larger ones, so
  // a later (not smaller) rank is selected among those. Ranks come in non-decreasing
  // order (lo <= hi <= the next q's hi), so one below `placed` was the last selected.
  size_t placed = 0;
  auto at = [&](size_t rank) {
    if (rank >= placed) {
      std::nth_element(v.begin() + static_cast<std::ptrdiff_t>(placed),
                       v.begin() + static_cast<std::ptrdiff_t>(rank), v.end());
      placed = rank + 1;
    }
    return v[rank];
  };
  for (double q : qs) {
    double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, v.size() - 1);
    double frac = pos - static_cast<double>(lo);
    const double vlo = at(lo), vhi = at(hi);
    out.push_back(vlo + (vhi - vlo) * frac);
  }
  return out;
}

}  // namespace

double Percentile(std::vector<double> v, double q) { return PercentilesInPlace(v, {q})[0]; }

Summary Summarize(const std::vector<RequestRecord>& records, const RunInfo& info) {
  Summary s;
  s.info = info;
  s.requests = records.size();
  std::vector<double> ttft, itl, e2e, abs_err, rel_err;
  for (const auto& r : records) {
    if (!r.ok()) {
      ++s.errors;
      continue;
    }
    if (r.ttft_s >= 0) ttft.push_back(r.ttft_s);
    if (r.ttft_s > 0 && r.predicted_ttft_s >= 0) {
      double e = std::abs(r.predicted_ttft_s - r.ttft_s);
      abs_err.push_back(e);
      rel_err.push_back(e / r.ttft_s);
    }
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    e2e.push_back(r.e2e_s);
    s.prompt_tokens += r.prompt_tokens;
    s.cached_tokens += r.cached_tokens;
    s.completion_tokens += r.completion_tokens;
    ++s.endpoints[r.endpoint.empty() ? "direct" : r.endpoint];
  }
  double sum = 0;
  for (double t : ttft) sum += t;
  s.ttft_mean_s = ttft.empty() ? kNaN : sum / static_cast<double>(ttft.size());
  const auto ttft_q = PercentilesInPlace(ttft, {0.50, 0.90, 0.99});
  s.ttft_p50_s = ttft_q[0];
  s.ttft_p90_s = ttft_q[1];
  s.ttft_p99_s = ttft_q[2];
  const auto itl_q = PercentilesInPlace(itl, {0.50, 0.90});
  s.itl_p50_s = itl_q[0];
  s.itl_p90_s = itl_q[1];
  const auto e2e_q = PercentilesInPlace(e2e, {0.50, 0.90});
  s.e2e_p50_s = e2e_q[0];
  s.e2e_p90_s = e2e_q[1];
  s.prediction_abs_err_p50_s = Percentile(abs_err, 0.50);
  s.prediction_rel_err_p90 = Percentile(rel_err, 0.90);
  s.cached_token_ratio = s.prompt_tokens > 0 ? static_cast<double>(s.cached_tokens) /
                                                   static_cast<double>(s.prompt_tokens)
                                             : 0.0;
  size_t ok = s.requests - s.errors;
  if (info.duration_s > 0) {
    s.throughput_rps = static_cast<double>(ok) / info.duration_s;
    s.output_tokens_per_s = static_cast<double>(s.completion_tokens) / info.duration_s;
  }
  return s;
}

boost::json::object RecordJson(const RequestRecord& r) {
  double itl_sum = 0;
  for (double g : r.itl_s) itl_sum += g;
  boost::json::object o;
  o["id"] = r.id;
  o["session"] = r.session;
  o["turn"] = r.turn;
  o["start_s"] = r.start_s;
  o["ttft_s"] = r.ttft_s >= 0 ? Num(r.ttft_s) : nullptr;
  o["itl_mean_s"] = r.itl_s.empty() ? nullptr : Num(itl_sum / r.itl_s.size());
  o["itl_count"] = r.itl_s.size();
  o["e2e_s"] = r.e2e_s;
  o["prompt_tokens"] = r.prompt_tokens;
  o["cached_tokens"] = r.cached_tokens;
  o["completion_tokens"] = r.completion_tokens;
  o["endpoint"] = r.endpoint;
  o["predicted_ttft_s"] = r.predicted_ttft_s >= 0 ? Num(r.predicted_ttft_s) : nullptr;
  o["error"] = r.ok() ? boost::json::value(nullptr) : boost::json::value(r.error);
  return o;
}

boost::json::object SummaryJson(const Summary& s) {
  boost::json::object o;
  o["workload"] = s.info.workload;
  o["strategy"] = s.info.strategy;
  o["label"] = s.info.label;
  o["target"] = s.info.target;
  o["requests"] = s.requests;
  o["errors"] = s.errors;
  o["ttft_mean_s"] = Num(s.ttft_mean_s);
  o["ttft_p50_s"] = Num(s.ttft_p50_s);
  o["ttft_p90_s"] = Num(s.ttft_p90_s);
  o["ttft_p99_s"] = Num(s.ttft_p99_s);
  o["itl_p50_s"] = Num(s.itl_p50_s);
  o["itl_p90_s"] = Num(s.itl_p90_s);
  o["e2e_p50_s"] = Num(s.e2e_p50_s);
  o["e2e_p90_s"] = Num(s.e2e_p90_s);
  o["prompt_tokens"] = s.prompt_tokens;
  o["cached_tokens"] = s.cached_tokens;
  o["completion_tokens"] = s.completion_tokens;
  o["cached_token_ratio"] = s.cached_token_ratio;
  o["duration_s"] = s.info.duration_s;
  o["throughput_rps"] = s.throughput_rps;
  o["output_tokens_per_s"] = s.output_tokens_per_s;
  o["time_scale"] = s.info.time_scale;
  o["concurrency"] = s.info.concurrency;
  boost::json::object eps;
  for (const auto& [name, n] : s.endpoints) eps[name] = n;
  o["endpoints"] = std::move(eps);
  o["prediction_abs_err_p50_s"] = Num(s.prediction_abs_err_p50_s);
  o["prediction_rel_err_p90"] = Num(s.prediction_rel_err_p90);
  return o;
}

Status MergeResult(boost::json::object& doc, const boost::json::object& result) {
  auto& slot = doc["results"];
  if (slot.is_null()) slot = boost::json::array();
  if (!slot.is_array()) return Status(ErrorCode::kInvalidArgument, "`results` is not an array");
  auto& arr = slot.as_array();
  auto same = [&](const boost::json::value& v) {
    if (!v.is_object()) return false;
    const auto& o = v.as_object();
    return GetStr(o, "workload") == GetStr(result, "workload") &&
           GetStr(o, "strategy") == GetStr(result, "strategy") &&
           GetStr(o, "label") == GetStr(result, "label");
  };
  auto it = std::find_if(arr.begin(), arr.end(), same);
  if (it != arr.end()) {
    *it = result;
  } else {
    arr.push_back(result);
  }
  return Status::Ok();
}

Result<boost::json::object> ReadSummaryFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return boost::json::object();
  std::stringstream ss;
  ss << f.rdbuf();
  if (ss.str().find_first_not_of(" \t\r\n") == std::string::npos) return boost::json::object();
  boost::system::error_code ec;
  auto v = boost::json::parse(ss.str(), ec);
  if (ec || !v.is_object()) {
    return Status(ErrorCode::kInvalidArgument, "summary file " + path + " is not a JSON object");
  }
  return std::move(v.as_object());
}

Status MergeIntoSummaryFile(const std::string& path, const boost::json::object& result) {
  auto doc = ReadSummaryFile(path);
  if (!doc.ok()) return doc.status();
  if (Status st = MergeResult(*doc, result); !st.ok()) return st;
  std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << boost::json::serialize(*doc) << "\n";
    if (!out) return Status(ErrorCode::kInternal, "cannot write " + tmp);
  }
  std::filesystem::rename(tmp, p, ec);
  if (ec) return Status(ErrorCode::kInternal, "cannot rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

std::string FormatTable(const boost::json::array& results) {
  // Groups in first-seen order; random is the reference row of each group.
  std::vector<std::string> groups;
  for (const auto& v : results) {
    if (!v.is_object()) continue;
    std::string g = RowLabel(v.as_object());
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  std::string out = fmt::format(
      "{:<18} {:<16} {:>5} {:>4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>6} {:>9} "
      "{:>9}\n",
      "workload", "strategy", "reqs", "err", "TTFT p50", "TTFT p90", "TTFT p99", "ITL p50",
      "ITL p90", "E2E p50", "E2E p90", "cached", "req/s", "p50/rand", "p90/rand");
  for (const auto& g : groups) {
    const boost::json::object* ref = nullptr;
    for (const auto& v : results) {
      if (v.is_object() && RowLabel(v.as_object()) == g &&
          GetStr(v.as_object(), "strategy") == "random") {
        ref = &v.as_object();
      }
    }
    for (const auto& v : results) {
      if (!v.is_object() || RowLabel(v.as_object()) != g) continue;
      const auto& o = v.as_object();
      out += fmt::format(
          "{:<18} {:<16} {:>5} {:>4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6.1f}% {:>6.2f} "
          "{:>9} {:>9}\n",
          g, GetStr(o, "strategy"), GetNum(o, "requests"), GetNum(o, "errors"),
          FmtSeconds(GetNum(o, "ttft_p50_s")), FmtSeconds(GetNum(o, "ttft_p90_s")),
          FmtSeconds(GetNum(o, "ttft_p99_s")), FmtSeconds(GetNum(o, "itl_p50_s")),
          FmtSeconds(GetNum(o, "itl_p90_s")), FmtSeconds(GetNum(o, "e2e_p50_s")),
          FmtSeconds(GetNum(o, "e2e_p90_s")), 100.0 * GetNum(o, "cached_token_ratio"),
          GetNum(o, "throughput_rps"),
          ref ? FmtRatio(GetNum(o, "ttft_p50_s"), GetNum(*ref, "ttft_p50_s")) : "-",
          ref ? FmtRatio(GetNum(o, "ttft_p90_s"), GetNum(*ref, "ttft_p90_s")) : "-");
    }
  }
  return out;
}

}  // namespace kinference::workload
