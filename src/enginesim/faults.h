// Fault injection for engine-sim, so the gateway's fault matrix (docs/reliability.md)
// can be tested against the process users would meet instead of in-process fakes.
//
// Request faults (`--fault KIND` for every generation request; a request's own
// `x-engine-sim-fault: KIND` header overrides it, `none` included), for
// POST /v1/completions and /v1/chat/completions:
//   crash-mid-stream  after `--fault-after-tokens` N tokens of a request were written,
//                     the process exits (status 70) once they had time to leave (0.2 s):
//                     every connection drops, as when vLLM is killed
//   5xx               500 in vLLM's error shape whose message quotes an API key and an
//                     internal address (kFaultSecret, kFaultAddress), as a provider
//                     that echoes them would
//   reset             the connection is closed without an answer
//   slow-first-byte   the request starts `--fault-delay-s` wall seconds late (nothing is
//                     sent before)
//   stall             after N tokens nothing more is written and the connection stays
//                     open until the client leaves (the request is aborted then)
//   wrong-usage       the usage reported is impossible: prompt_tokens 2^40 (beyond
//                     int32), completion_tokens -7, cached_tokens above prompt_tokens
// /metrics faults (`--fault-metrics KIND`): fail (500, no body) | slow (answered after
// `--fault-delay-s` wall seconds).
// Not for production: a real vLLM has none of this.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace kinference::enginesim {

enum class RequestFault {
  kNone,
  kCrashMidStream,
  kServerError,
  kReset,
  kSlowFirstByte,
  kStall,
  kWrongUsage
};
enum class MetricsFault { kNone, kFail, kSlow };

struct FaultOptions {
  RequestFault request = RequestFault::kNone;
  MetricsFault metrics = MetricsFault::kNone;
  int after_tokens = 2;  // crash-mid-stream, stall
  double delay_s = 5;    // slow-first-byte, slow /metrics (wall seconds)
};

// The header a request names its own fault in.
inline constexpr const char* kFaultHeader = "x-engine-sim-fault";
// What the 5xx fault's message quotes (tests assert neither reaches a gateway's client).
inline constexpr const char* kFaultSecret = "sk-enginesim-fault-0123456789abcdef";
inline constexpr const char* kFaultAddress = "10.203.0.7:8000";

// "none" | "crash-mid-stream" | "5xx" | "reset" | "slow-first-byte" | "stall" |
// "wrong-usage"; kInvalidArgument naming the accepted values otherwise.
Result<RequestFault> ParseRequestFault(std::string_view name);
// "none" | "fail" | "slow".
Result<MetricsFault> ParseMetricsFault(std::string_view name);

// The 5xx fault's body: vLLM's error shape, its message quoting kFaultSecret and
// kFaultAddress.
std::string FaultServerErrorBody();
// `response_json` (a response or chunk object) with its usage made impossible (see
// wrong-usage above); unchanged when it has no usage object.
std::string WithWrongUsage(std::string_view response_json);

}  // namespace kinference::enginesim
