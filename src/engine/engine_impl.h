// Engine::Impl: the internal state of the engine model (engine/engine.h); private to
// src/engine. Scheduling (PlanStep) lives in scheduler.cc, request bookkeeping and step
// completion in engine.cc.
//
// Request life cycle, as vLLM V1: pending (front-end delay) -> waiting (FCFS deque;
// preempted requests go back to its front) -> running -> finished. A request's token
// sequence is prompt + output tokens so far; `num_computed` tokens have KV in `blocks`.
// A step schedules num_tokens - num_computed tokens for it (capped by the step budget);
// when all of them are computed the step samples the next output token.
//
// Thread-safety: not thread-safe; owned by one Engine.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/block_hash_memo.h"
#include "engine/engine.h"
#include "engine/kv_cache.h"

namespace kinference::engine {

struct Req {
  EngineRequest r;
  std::vector<TokenId> tokens;  // prompt + output tokens so far
  int prompt_len = 0;
  int num_computed = 0;           // tokens whose KV is in `blocks`
  int num_cached_blocks = 0;      // leading blocks already offered to the prefix cache
  std::vector<int> blocks;        // block ids, in sequence order
  std::vector<BlockHash> hashes;  // chained hashes of the leading full blocks of `tokens`
  int num_output = 0;
  int eos_at = 0;  // output count at which EOS is sampled; 0 = never (ignore_eos)
  Seconds ready = 0;
  std::pair<Seconds, uint64_t> pending_key{0, 0};
  enum class State { kPending, kWaiting, kRunning } state = State::kPending;
  bool scheduled_once = false;
  int cached_tokens = 0;
  Seconds first_scheduled = 0, first_token = 0, last_token = 0;
  int preemptions = 0;
  bool abort_requested = false;
  int num_tokens() const { return static_cast<int>(tokens.size()); }
};

class Engine::Impl {
 public:
  explicit Impl(HardwareProfile profile);

  Status AddRequest(EngineRequest request);
  void Abort(const std::string& id);
  bool HasWork() const { return !live_.empty() || !abort_outputs_.empty(); }
  std::optional<Seconds> NextReadyTime() const;
  std::optional<Seconds> PlanStep(Seconds now);  // scheduler.cc
  StepOutput CompleteStep();
  // engine_query.cc: read-only queries for the simulator's oracle (engine.h).
  int PrefixCacheHitTokens(const std::vector<TokenId>& prompt) const;
  int QueuedPrefillTokens() const;
  int NumRunning() const { return static_cast<int>(running_.size()); }

  HardwareProfile profile_;
  EngineMetrics metrics_;

 private:
  struct Scheduled {
    Req* req;
    int tokens;      // tokens computed for it in this step
    int ctx_before;  // num_computed before the step
    bool is_decode;
  };
  // scheduler.cc
  bool AllocateSlots(Req& r, int n);
  void CacheFullBlocks(Req& r, int upto_tokens);
  void EnsureHashes(Req& r, int n_blocks);
  std::vector<int> FindCachedPrefix(Req& r);
  void Preempt(Req& r);
  void PromoteReady(Seconds now);
  // engine.cc
  void FreeBlocks(Req& r);
  void RemoveFromQueues(Req& r);
  void FinishAbort(Req& r, Seconds t);
  void EmitToken(Req& r, Seconds t, StepOutput& out);
  void UpdateGauges();

  BlockPool pool_;
  // Block hashes already computed (a multi-turn prompt repeats its earlier turns' blocks,
  // shared-prefix prompts their prefix's).
  BlockHashMemo hash_memo_;
  std::unordered_map<std::string, std::unique_ptr<Req>> live_;
  std::map<std::pair<Seconds, uint64_t>, Req*> pending_;  // by (ready time, arrival order)
  std::deque<Req*> waiting_;
  std::vector<Req*> running_;  // in scheduling priority order; the last is preempted first
  uint64_t next_seq_ = 0;

  bool planned_ = false;
  Seconds plan_start_ = 0, plan_duration_ = 0, last_time_ = 0;
  std::vector<Scheduled> scheduled_;
  std::vector<Req*> deferred_aborts_;           // Abort() calls between Plan and Complete
  std::vector<FinishedRequest> abort_outputs_;  // reported by the next CompleteStep
};

}  // namespace kinference::engine
