// Mooncake conversation trace replay (workload/workload.h, "trace"): the file is parsed
// once into block ids per line; prompt text is built from them when a session is asked for.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>

#include "common/tokenizer.h"
#include "workload/workload_internal.h"

namespace kinference::workload::internal {
namespace {

// One trace line; `*conversation_key`: the line's second hash id (first when it has one),
// see WorkloadSpec::trace_sample.
Result<TraceLine> ParseLine(std::string_view text, size_t line_no, const WorkloadSpec& spec,
                            double* timestamp_ms, uint64_t* conversation_key) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  auto bad = [&](std::string what) {
    return Status(ErrorCode::kInvalidArgument,
                  fmt::format("{}:{}: {}", spec.trace_path, line_no + 1, what));
  };
  if (ec || !v.is_object()) return bad("not a JSON object");
  const auto& o = v.as_object();
  const auto* ts = o.if_contains("timestamp");
  const auto* in = o.if_contains("input_length");
  const auto* outlen = o.if_contains("output_length");
  const auto* ids = o.if_contains("hash_ids");
  if (!ts || !ts->is_number() || !in || !in->is_int64() || !outlen || !outlen->is_int64() || !ids ||
      !ids->is_array()) {
    return bad("needs timestamp, input_length, output_length, hash_ids");
  }
  *timestamp_ms = ts->to_number<double>(ec);
  int64_t input = in->as_int64();
  int64_t output = outlen->as_int64();
  if (input <= 0 || output <= 0) return bad("lengths must be positive");
  if (spec.max_output_tokens > 0 && output > spec.max_output_tokens) {
    output = spec.max_output_tokens;
  }
  TraceLine line;
  line.line_no = line_no;
  line.input_tokens = static_cast<size_t>(input);
  line.output_tokens = static_cast<int>(output);
  const auto& id_array = ids->as_array();
  *conversation_key = 0;
  if (!id_array.empty()) {
    const auto& key = id_array[std::min<size_t>(1, id_array.size() - 1)];
    if (key.is_int64()) *conversation_key = static_cast<uint64_t>(key.as_int64());
    if (key.is_uint64()) *conversation_key = key.as_uint64();
  }
  const size_t needed = (line.input_tokens + kTraceBlockTokens - 1) / kTraceBlockTokens;
  for (const auto& id : id_array) {
    if (line.hash_ids.size() == needed) break;
    if (!id.is_int64() && !id.is_uint64()) return bad("hash_ids must be integers");
    line.hash_ids.push_back(id.is_int64() ? static_cast<uint64_t>(id.as_int64()) : id.as_uint64());
  }
  return line;
}

}  // namespace

Result<std::vector<TraceLine>> ReadTrace(const WorkloadSpec& spec) {
  std::ifstream f(spec.trace_path);
  if (!f) return Status(ErrorCode::kNotFound, "cannot read trace file " + spec.trace_path);
  std::vector<TraceLine> out;
  std::string text;
  double first_ts = 0;
  for (size_t line_no = 0; std::getline(f, text); ++line_no) {
    if (line_no < spec.trace_offset) continue;
    if (spec.sessions > 0 && out.size() >= spec.sessions) break;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    double ts = 0;
    uint64_t key = 0;
    auto line = ParseLine(text, line_no, spec, &ts, &key);
    if (!line.ok()) return line.status();
    if (spec.trace_sample > 1 && key % spec.trace_sample != 0) continue;
    if (out.empty()) first_ts = ts;
    line->arrival_s = std::max(0.0, (ts - first_ts) / 1000.0 / spec.speed);
    out.push_back(std::move(*line));
  }
  if (out.empty()) {
    return Status(ErrorCode::kInvalidArgument, fmt::format("trace {} has no lines at offset {}",
                                                           spec.trace_path, spec.trace_offset));
  }
  return out;
}

Session TraceLineSession(const TraceLine& line) {
  Session s;
  s.id = fmt::format("trace-{:06d}", line.line_no);
  s.arrival_s = line.arrival_s;
  Turn t;
  t.max_tokens = line.output_tokens;
  size_t remaining = line.input_tokens;
  t.user_text.reserve(remaining * 6);
  for (uint64_t h : line.hash_ids) {
    if (remaining == 0) break;
    size_t n = std::min(remaining, kTraceBlockTokens);
    t.user_text += TraceBlockText(h, n);
    remaining -= n;
  }
  if (remaining > 0) {
    t.user_text += SyntheticText(DeriveSeed(0, SeedTag::kTraceFiller, line.line_no), remaining);
  }
  s.turns.push_back(std::move(t));
  return s;
}

}  // namespace kinference::workload::internal
