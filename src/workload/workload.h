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
// The workloads (all lengths in tokens; seeds derived from WorkloadSpec::seed):
//   shared-prefix  `sessions` one-turn requests; each = one of 24 distinct 16,000-token
//                  prefixes (chosen seeded-uniformly) + 256 unique tokens, as one user
//                  message; 256 output tokens. Every prefix is reusable from the KV cache.
//   independent    the same lengths (16,256-token prompt, 256 output), every prompt unique.
//                  WorkloadSpec::shared_prefix overrides the shape of both.
//   multiturn      `sessions` conversations of 8 turns: a unique 3,500-token system prompt,
//                  a 1,100-token user message per turn, 160 output tokens per turn, 2 s
//                  think time between turns; turn k re-sends the whole history (the prompt
//                  grows by ~1,260 tokens a turn), so only the first turn has nothing to
//                  reuse. WorkloadSpec::multiturn overrides the shape.
//   trace          Mooncake conversation trace replay (FAST'25 release, JSONL with
//                  timestamp [ms], input_length, output_length, hash_ids of 512-token
//                  blocks). Prompt = concatenation over hash_ids of SyntheticText(seed of
//                  the hash id, 512), the last block cut so the prompt is input_length
//                  tokens (blocks missing from hash_ids are unique filler), so equal hash_ids
//                  give equal text. Lines from trace_offset on, thinned to one
//                  conversation in trace_sample, are used until `sessions` are taken
//                  (sessions = 0: to the end); arrival = (timestamp - first timestamp of the
//                  slice) / 1000 / speed, unless rate_rps > 0.
// Sizes are the project's benchmark choices: shared-prefix / independent match the
// calibration points of engine/profile.cc (16,000-token prefix + 256, 256 output);
// multiturn sizes are FITTED: the publication gives no multiturn parameters, so the
// shape was chosen to fit both its light-load multiturn TTFT medians (3 x l40s-27b-fp8,
// 0.05 sessions/s: random 1.89 s vs published Service 1.70 s, predicted-ttft 0.61 s vs
// Kinference 0.59 s) and its capacity multiturn figures (closed loop, 4 s TTFT SLO: peak
// goodput random 27.8 vs 23.8 req/min, predicted-ttft 85.7 vs 82.7; predicted-ttft holds
// the SLO through concurrency 8, random never). The system prompt sets random's cold
// recomputes, user + output tokens set predicted-ttft's median, and the output length
// sets the decode time and so the closed-loop rate (the earlier 3,000 / 1,000 / 256
// shape fitted light load alone and gave a 67.8 req/min predicted-ttft peak).
// docs/simulator.md has the sweep. Trace block text does
// not depend on the seed (one trace, one text).
// Arrivals: when rate_rps > 0, sessions arrive as a Poisson process of that rate (seeded,
// first arrival at 0); otherwise one-turn and multiturn sessions have no arrival time
// (closed loop) and trace sessions use the trace timestamps.
//
// Thread-safety: generation is pure; the returned data is plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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

// Workload constants (tokens / seconds), see the table at the top of this file.
inline constexpr size_t kSharedPrefixCount = 24;
inline constexpr size_t kSharedPrefixTokens = 16000;
inline constexpr size_t kUniqueSuffixTokens = 256;
inline constexpr int kSingleTurnOutputTokens = 256;
inline constexpr size_t kMultiturnTurns = 8;
inline constexpr size_t kMultiturnSystemTokens = 3500;
inline constexpr size_t kMultiturnUserTokens = 1100;
inline constexpr int kMultiturnOutputTokens = 160;
inline constexpr double kMultiturnThinkTimeS = 2.0;
inline constexpr size_t kTraceBlockTokens = 512;  // Mooncake hash_ids block size

// The shape of a multiturn conversation (tokens, seconds). Defaults: the constants above.
struct MultiturnShape {
  size_t turns = kMultiturnTurns;
  size_t system_tokens = kMultiturnSystemTokens;
  size_t user_tokens = kMultiturnUserTokens;
  int output_tokens = kMultiturnOutputTokens;
  double think_time_s = kMultiturnThinkTimeS;
};

// The shape of the shared-prefix and independent workloads (tokens). Defaults: the
// constants above; smaller shapes fit small models (make demo-vllm: a tiny model with a
// 32,768-token context, whose BPE tokenizer spends ~3.6 tokens on one synthetic word).
// One prefix of tens of thousands of tokens shared by every request (prefixes = 1) is
// the "large shared prefix" case of docs/simulator.md.
struct SharedPrefixShape {
  size_t prefixes = kSharedPrefixCount;  // distinct prefixes (shared-prefix only)
  size_t prefix_tokens = kSharedPrefixTokens;
  size_t suffix_tokens = kUniqueSuffixTokens;  // unique per request
  int output_tokens = kSingleTurnOutputTokens;
};

struct WorkloadSpec {
  std::string name;      // "shared-prefix" | "multiturn" | "independent" | "trace"
  size_t sessions = 24;  // number of sessions (requests, for one-turn workloads)
  double rate_rps = 0;   // Poisson session arrival rate; 0 = closed loop
  uint64_t seed = 1;
  // trace only:
  std::string trace_path;     // Mooncake JSONL
  size_t trace_offset = 0;    // first trace line used
  double speed = 1.0;         // arrival times divided by speed (2 = twice as fast)
  int max_output_tokens = 0;  // clamp output_length (0 = no clamp)
  // Keep one conversation in `trace_sample` (1 = every line). A conversation is keyed by
  // its second hash id (the first block after the shared system block; the first id
  // for one-block prompts); lines whose key % trace_sample == 0 are kept. Thins the load
  // while keeping every turn of a kept conversation, so prefix reuse stays real (lines
  // 0-2999 of the Mooncake trace: 33% reusable prompt tokens at sample 10 against 8% for
  // a contiguous 300-line slice; measured with a prefix-match count over hash_ids).
  size_t trace_sample = 1;
  // multiturn only:
  MultiturnShape multiturn;
  // shared-prefix and independent:
  SharedPrefixShape shared_prefix;
  // Bursts (open loop; used when burst_size > 0 and rate_rps == 0): sessions arrive in
  // bursts of burst_size, one every burst_interval_s (first at 0), the requests of a
  // burst spread evenly over burst_spread_s; in shared-prefix the requests of burst b
  // all carry prefix b % prefixes (a burst of one long prompt, cold until it lands).
  size_t burst_size = 0;
  double burst_interval_s = 60;
  double burst_spread_s = 0.01;
};

// Text of one Mooncake block: SyntheticText(seed of hash_id, n_tokens), n <= 512. A
// shorter block is a prefix of the full one.
std::string TraceBlockText(uint64_t hash_id, size_t n_tokens = kTraceBlockTokens);

// A workload's sessions, generated on demand: what stays in memory is per-session
// metadata (arrival time, number of turns) and the text shared by many sessions (the
// shared-prefix workload's prefixes, the parsed trace lines' block ids), not every
// session's prompts. `Get(i)` builds session i, equal to MakeWorkload(spec)[i]. The
// simulator asks for a session when its first turn is sent and drops it when its last
// turn finishes, so its memory follows the sessions in flight (64 replicas x 100,000
// shared-prefix requests held ~100 KB of prompt text per request up front: 19.9 GB).
//
// Thread-safety: immutable after construction; Get may be called from any thread (the
// simulator's scenario runner shares one source between its threads).
class SessionSource {
 public:
  SessionSource();
  // Sessions already built (tests, ad-hoc lists): Get returns copies.
  static SessionSource FromSessions(std::vector<Session> sessions);

  size_t size() const;
  std::optional<double> arrival_s(size_t i) const;
  size_t turns(size_t i) const;
  size_t total_turns() const;  // sum of turns(i)
  Session Get(size_t i) const;

 private:
  friend Result<SessionSource> MakeSessionSource(const WorkloadSpec& spec);
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// The sessions of a workload, generated on demand (SessionSource). Errors: as MakeWorkload.
Result<SessionSource> MakeSessionSource(const WorkloadSpec& spec);

// Builds every session of a workload up front (SessionSource::Get for each). Errors:
// kInvalidArgument for an unknown name or bad parameters; kNotFound when the trace file
// cannot be read.
Result<std::vector<Session>> MakeWorkload(const WorkloadSpec& spec);

// The messages of turn `k` of `s`, given the assistant replies to turns 0..k-1.
std::vector<ChatMessage> MessagesForTurn(const Session& s, size_t k,
                                         const std::vector<std::string>& replies);

}  // namespace kinference::workload
