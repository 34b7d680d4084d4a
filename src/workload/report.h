// Bench results: one record per request, the summary of a run, and the summary file
// that collects runs side by side (one result per workload label + strategy).
//
// Promises: pure computation and JSON shaping, no I/O except the explicitly named file
// helpers. All times are model seconds (wall seconds x time_scale when the servers run
// time-scaled). Percentiles use linear interpolation between closest ranks (NumPy's
// default "linear" method), over successful requests only; a statistic with no samples
// is null in JSON and NaN in C++.
//
// Thread-safety: plain values and free functions; safe from any thread.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace kinference::workload {

// What the client saw of one request (one turn of one session).
struct RequestRecord {
  std::string id;       // "<session>/<turn>"
  std::string session;  // workload session id
  size_t turn = 0;
  double start_s = 0;         // request sent, seconds since the run started
  double ttft_s = -1;         // first non-empty content chunk; < 0 when none arrived
  std::vector<double> itl_s;  // gaps between consecutive content chunks
  double e2e_s = 0;           // request sent to end of stream
  int64_t prompt_tokens = 0;  // from the final `usage` chunk
  int64_t cached_tokens = 0;  // usage.prompt_tokens_details.cached_tokens
  int64_t completion_tokens = 0;
  std::string endpoint;  // x-kinference-endpoint response header (gateway), else empty
  // x-kinference-predicted-ttft-ms response header (gateway) in seconds; < 0 when absent.
  double predicted_ttft_s = -1;
  std::string error;  // empty when the request succeeded
  bool ok() const { return error.empty(); }
};

// Fields that label a run.
struct RunInfo {
  std::string workload;  // workload name
  std::string strategy;  // routing strategy asked for (x-kinference-strategy), or "direct"
  std::string label;     // free-form row label; empty: none
  std::string target;    // URL benchmarked
  double time_scale = 1;
  double duration_s = 0;   // model seconds from the first request sent to the last finished
  size_t concurrency = 0;  // closed loop: sessions kept in flight; 0: open loop
};

struct Summary {
  RunInfo info;
  size_t requests = 0;  // all requests sent
  size_t errors = 0;
  double ttft_mean_s = 0, ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0;
  double itl_p50_s = 0, itl_p90_s = 0;
  double e2e_p50_s = 0, e2e_p90_s = 0;
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  double cached_token_ratio = 0;            // sum cached / sum prompt tokens (successful requests)
  double throughput_rps = 0;                // successful requests / duration_s
  double output_tokens_per_s = 0;           // completion tokens / duration_s
  std::map<std::string, size_t> endpoints;  // requests per serving endpoint
  // The router's TTFT prediction against the TTFT the client saw, over successful requests
  // with a prediction (NaN without): median |predicted - observed| (seconds) and the 90th
  // percentile of |predicted - observed| / observed. The simulator reports the same two
  // figures against gateway-observed TTFT (sim/scenarios.h); over HTTP the client's TTFT
  // is the gateway's plus the loopback hop (well under a millisecond).
  double prediction_abs_err_p50_s = 0;
  double prediction_rel_err_p90 = 0;
};

// q in [0, 1]; NaN for an empty sample. `v` need not be sorted.
double Percentile(std::vector<double> v, double q);

Summary Summarize(const std::vector<RequestRecord>& records, const RunInfo& info);

// JSON shapes. Record: id, session, turn, start_s, ttft_s, itl_mean_s, itl_count, e2e_s,
// prompt_tokens, cached_tokens, completion_tokens, endpoint, predicted_ttft_s (null when
// absent), error (null when ok).
boost::json::object RecordJson(const RequestRecord& r);
// Summary: workload, strategy, label, target, requests, errors, ttft_{mean,p50,p90,p99}_s,
// itl_p50_s, itl_p90_s, e2e_p50_s, e2e_p90_s, prompt_tokens, cached_tokens,
// completion_tokens, cached_token_ratio, duration_s, throughput_rps, output_tokens_per_s,
// time_scale, concurrency (0: open loop), endpoints {name: count}, prediction_abs_err_p50_s,
// prediction_rel_err_p90.
boost::json::object SummaryJson(const Summary& s);

// Inserts `result` into doc["results"] (created if absent), replacing an element with the
// same workload, strategy and label. kInvalidArgument if doc["results"] is not an array.
Status MergeResult(boost::json::object& doc, const boost::json::object& result);

// Reads FILE (a missing file is an empty document), merges, writes it back atomically.
// Errors: kInvalidArgument for unparsable JSON, kInternal for write failures.
Status MergeIntoSummaryFile(const std::string& path, const boost::json::object& result);
Result<boost::json::object> ReadSummaryFile(const std::string& path);

// Human-readable table of the results array, grouped by workload (label) with one row
// per strategy, and each row's TTFT p50/p90 relative to the `random` row of its group.
std::string FormatTable(const boost::json::array& results);

}  // namespace kinference::workload
