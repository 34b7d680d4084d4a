// Internals of the workload library shared by its source files (workload.cc, trace.cc):
// seed derivation and the parsed form of a Mooncake trace. Not part of the public API.
//
// Thread-safety: pure functions and plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "workload/workload.h"

namespace kinference::workload::internal {

// Tags that keep the seed streams of different text kinds apart.
enum class SeedTag : uint64_t {
  kPrefix = 1,
  kSuffix = 2,
  kSystem = 3,
  kUser = 4,
  kTraceBlock = 5,
  kTraceFiller = 6,
  kArrivals = 7,
  kPrefixChoice = 8,
};

uint64_t DeriveSeed(uint64_t seed, SeedTag tag, uint64_t a, uint64_t b = 0);

// One kept trace line, without its text (built on demand by TraceLineSession).
struct TraceLine {
  size_t line_no = 0;  // 0-based line index in the file
  double arrival_s = 0;
  size_t input_tokens = 0;
  int output_tokens = 0;
  std::vector<uint64_t> hash_ids;  // the blocks the prompt is made of (at most what it needs)
};

// The lines of spec.trace_path that the spec selects (offset, sample, sessions), with
// arrival times relative to the first kept line, divided by spec.speed. Errors: kNotFound
// (unreadable file), kInvalidArgument (malformed line, nothing selected).
Result<std::vector<TraceLine>> ReadTrace(const WorkloadSpec& spec);
// The one-turn session of a trace line (its id, arrival and prompt text).
Session TraceLineSession(const TraceLine& line);

}  // namespace kinference::workload::internal
