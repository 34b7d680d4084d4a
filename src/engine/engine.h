// Engine: a vLLM-V1-like inference engine model, as a pure library.
//
// What it promises: given requests (token ids) and the passage of time, it schedules
// them the way vLLM's V1 scheduler does (continuous batching under a per-step token
// budget, chunked prefill, 16-token paged KV blocks with prefix caching by chained
// block hashes, LRU eviction of unreferenced cached blocks, recompute preemption when
// blocks run out) and reports per-step outputs (tokens, finished requests with usage and
// timings) and vLLM-named metrics. Step durations come from the hardware profile's
// cost model (engine/profile.h).
//
// No I/O, no threads, no clock reads: every call takes the current time explicitly.
// The engine-sim shell drives it with a (scaled) real clock; the simulator with a
// virtual one. Driving loop:
//   while (auto d = engine.PlanStep(now)) { wait until now + *d; out = engine.CompleteStep(); }
//
// Thread-safety: not thread-safe; one owner thread (or strand) per Engine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/tokenizer.h"
#include "engine/metrics.h"
#include "engine/profile.h"
#include "kv/events.h"

namespace kinference::engine {

struct EngineRequest {
  std::string id;               // unique among live requests
  std::vector<TokenId> prompt;  // rendered, tokenized prompt
  int max_tokens = 16;          // output length cap (tokens)
  bool ignore_eos = false;      // true: always produce exactly max_tokens
  uint64_t seed = 0;            // fixes the output tokens and the EOS position
  Seconds arrival = 0;          // when the request reached the engine
};

// One generated token.
struct TokenEvent {
  std::string request_id;
  TokenId token = 0;
  std::string text;  // detokenized piece, e.g. " k3x9"
  int index = 0;     // 0 for the first output token
};

enum class FinishReason { kLength, kStop, kAbort };
const char* FinishReasonName(FinishReason r);  // "length", "stop", "abort"

struct FinishedRequest {
  std::string request_id;
  FinishReason reason = FinishReason::kLength;
  int prompt_tokens = 0;
  int cached_tokens = 0;  // prefix-cache hit at first scheduling, as vLLM reports it
  int completion_tokens = 0;
  Seconds arrival = 0, first_scheduled = 0, first_token = 0, finished = 0;
  int preemptions = 0;
};

struct StepOutput {
  Seconds start = 0, end = 0;
  int scheduled_prefill_tokens = 0;
  int scheduled_decode_seqs = 0;
  std::vector<TokenEvent> tokens;
  std::vector<FinishedRequest> finished;
  // vLLM's KV-cache events for the step (kv/events.h), as vLLM emits them: one
  // BlockStored per run of blocks a request filled (block hashes as vLLM's sha256 keys,
  // parent, token ids, block size, medium "GPU"), one BlockRemoved per evicted block,
  // before the BlockStored that needed its space.
  std::vector<kv::KvEvent> kv_events;
};

class Engine {
 public:
  explicit Engine(HardwareProfile profile);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. Errors: kInvalidArgument for an empty prompt, max_tokens < 1,
  // a duplicate live id, or prompt + max_tokens over profile.max_model_len or over the
  // KV cache capacity (num_gpu_blocks * block_size tokens). The request becomes
  // schedulable after its front-end delay (see NextReadyTime). Output token k is
  // " " + SyntheticWord(seed, k), one token each; unless ignore_eos, EOS comes after a
  // seed-fixed count in [1, max_tokens], exponential with mean 343 tokens (engine.cc) (length is
  // checked first, as vLLM's check_stop).
  Status AddRequest(EngineRequest request);
  // Aborts a waiting or running request; frees its blocks; it appears in the next
  // step's `finished` with reason kAbort. Unknown ids are ignored.
  void Abort(const std::string& request_id);

  // True while any request is queued (including in its front-end delay), running, or an
  // abort is still to be reported.
  bool HasWork() const;
  // Earliest time at which a request still in its front-end delay becomes schedulable
  // (arrival + profile.frontend_s_per_prompt_token * prompt tokens), or nullopt when none
  // is. When PlanStep returns nullopt while HasWork() is true, call PlanStep again then.
  // (Addition to the original interface; backward compatible.)
  std::optional<Seconds> NextReadyTime() const;
  // Schedules the next step at `now` and returns its duration in seconds, or nullopt
  // when there is nothing to run now. A step that only reports aborts lasts 0 s. Must be followed
  // by CompleteStep() before the next PlanStep(); AddRequest/Abort are allowed in between and take
  // effect next step.
  std::optional<Seconds> PlanStep(Seconds now);
  // Applies the planned step (ending at plan time + duration) and returns what it
  // produced.
  StepOutput CompleteStep();

  // ---- Read-only queries for the simulator's `oracle` strategy (src/sim/oracle.h): exact
  // internal state that no real vLLM deployment exposes. Additive; nothing else uses them.
  // Prompt tokens of `prompt` that would be prefix-cache hits if it were scheduled now:
  // whole cached blocks, capped so that at least one token is computed (as PlanStep).
  int PrefixCacheHitTokens(const std::vector<TokenId>& prompt) const;
  // Prompt tokens still to prefill, summed over requests in their front-end delay,
  // waiting, or running without a first token; a request not yet scheduled counts its
  // tokens beyond its current prefix-cache hit.
  int QueuedPrefillTokens() const;
  // Requests in the running queue (vllm:num_requests_running).
  int NumRunning() const;

  // Current gauges, counters and histograms under vLLM's metric names.
  const EngineMetrics& metrics() const;
  const HardwareProfile& profile() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kinference::engine
