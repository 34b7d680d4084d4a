// Bench driver: replays workload sessions as streaming OpenAI chat completions against a
// target (the gateway or an engine-sim / vLLM replica) and records what the client saw.
//
// Each request is POST /v1/chat/completions with stream=true,
// stream_options.include_usage=true and ignore_eos=true (a vLLM extension) so that the
// output is exactly max_tokens long. TTFT = first SSE chunk with non-empty
// choices[0].delta.content; ITL = gaps between content chunks; e2e = until the stream
// ends; token counts from the final `usage` chunk (prompt_tokens_details.cached_tokens is
// the prefix-cache hit count, as vLLM reports it with --enable-prompt-tokens-details).
//
// Modes: open loop (sessions start at their arrival_s) or closed loop (concurrency > 0:
// that many sessions in flight, the next one starting when one ends; arrival_s ignored).
// Multi-turn sessions send turn k+1 after turn k finished plus its think time, with the
// assistant text actually received as history; a failed turn ends its session.
//
// Time scale K: the servers run K times faster than wall time, so waits (arrivals, think
// times, timeouts) are divided by K and every measured time is multiplied by K; all
// results are model seconds.
//
// Thread-safety: RunSessions() blocks the calling thread and runs one private io_context on it;
// one Driver per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workload/report.h"
#include "workload/workload.h"

namespace kinference::bench {

struct DriverOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string model;     // "model" field of each request
  std::string strategy;  // sent as x-kinference-strategy when not empty
  double time_scale = 1.0;
  size_t concurrency = 0;           // > 0: closed loop
  double request_timeout_s = 1800;  // model seconds without progress before giving up
  // Called after each finished request (progress reporting); may be empty.
  std::function<void(const workload::RequestRecord&, size_t done)> on_record;
};

// The OpenAI request body for turn `k` of `s`.
std::string ChatRequestBody(const workload::Session& s, size_t k,
                            const std::vector<std::string>& replies, const std::string& model);

struct RunOutput {
  std::vector<workload::RequestRecord> records;  // in completion order
  double duration_s = 0;                         // model seconds, first send to last finish
};

// Runs all sessions to completion. Errors of single requests are recorded, not returned;
// kInvalidArgument when neither arrivals nor a concurrency is given.
Result<RunOutput> RunSessions(const std::vector<workload::Session>& sessions,
                              const DriverOptions& opts);

}  // namespace kinference::bench
