// Workloads: the request streams that `kinference bench` (real time, over HTTP) and
// `kinference simulate` (virtual time) both replay, so that both measure the same work.
//
// A workload is a list of sessions. A session is a conversation of one or more turns;
// turn k's request is the chat history so far (system prompt, earlier user messages and
// the assistant replies the server actually returned) plus the new user message.
// Drivers send turn k+1 only after turn k finished, plus the turn's think time.
// Single-turn workloads (shared-prefix, independent, trace) are one-turn sessions.
//
// Text is synthetic and exact in tokens under the engine-sim tokenizer
// (common/tokenizer.h): `SyntheticText(seed, n)` is n tokens, and equal seeds give equal
// text, so prefix sharing is real. Lengths below are in tokens of that tokenizer.
//
// Thread-safety: generation is pure; the returned data is plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace kinference::workload {

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

struct Turn {
  std::string user_text;    // new user message of this turn
  int max_tokens = 256;     // output length; sent with ignore_eos so it is exact
  double think_time_s = 0;  // delay after the previous turn finished
};

struct Session {
  std::string id;
  // Arrival of the first turn, seconds from the start of the run; nullopt in
  // closed-loop runs, where the driver starts a session when a slot frees.
  std::optional<double> arrival_s;
  std::string system_prompt;  // empty: no system message
  std::vector<Turn> turns;
};

struct WorkloadSpec {
  std::string name;         // "shared-prefix" | "multiturn" | "independent" | "trace"
  size_t sessions = 24;     // number of sessions (requests, for one-turn workloads)
  double rate_rps = 0;      // Poisson session arrival rate; 0 = closed loop
  uint64_t seed = 1;
  // trace only:
  std::string trace_path;   // Mooncake JSONL
  size_t trace_offset = 0;  // first trace line used
  double speed = 1.0;       // arrival times divided by speed (2 = twice as fast)
  int max_output_tokens = 0;  // clamp output_length (0 = no clamp)
};

// Builds the sessions of a workload. Errors: kInvalidArgument for an unknown name or
// bad parameters; kNotFound when the trace file cannot be read.
Result<std::vector<Session>> MakeWorkload(const WorkloadSpec& spec);

// The messages of turn `k` of `s`, given the assistant replies to turns 0..k-1.
std::vector<ChatMessage> MessagesForTurn(const Session& s, size_t k,
                                         const std::vector<std::string>& replies);

}  // namespace kinference::workload
