// Engine::Impl::PlanStep: one step of vLLM V1's Scheduler.schedule()
// (vllm/v1/core/sched/scheduler.py) with the block accounting of kv_cache_manager.py.
#include <algorithm>

#include "engine/engine_impl.h"

namespace kinference::engine {

void Engine::Impl::EnsureHashes(Req& r, int n_blocks) {
  const int bs = profile_.block_size;
  const int have = static_cast<int>(r.hashes.size());
  const int want = std::min(n_blocks, r.num_tokens() / bs);  // full blocks only
  if (want <= have) return;
  hash_memo_.Extend(r.hashes,
                    std::span<const TokenId>(r.tokens.data() + static_cast<size_t>(have) * bs,
                                             static_cast<size_t>(want - have) * bs),
                    static_cast<size_t>(bs));
}

// Blocks are offered to the prefix cache when they are allocated for the tokens a step
// computes, as vLLM's allocate_slots does (the step computes their KV).
void Engine::Impl::CacheFullBlocks(Req& r, int upto_tokens) {
  int full = upto_tokens / profile_.block_size;
  EnsureHashes(r, full);
  for (int i = r.num_cached_blocks; i < full; ++i) {
    std::optional<uint64_t> parent;
    if (i > 0) parent = r.hashes[i - 1].key;
    const size_t bs = static_cast<size_t>(profile_.block_size);
    pool_.Cache(r.blocks[i], r.hashes[i].key, parent,
                std::span<const TokenId>(r.tokens.data() + i * bs, bs));
  }
  r.num_cached_blocks = std::max(r.num_cached_blocks, full);
}

bool Engine::Impl::AllocateSlots(Req& r, int n) {
  const int bs = profile_.block_size;
  int needed = (r.num_computed + n + bs - 1) / bs - static_cast<int>(r.blocks.size());
  if (needed > 0 && !pool_.Allocate(needed, r.blocks)) return false;
  CacheFullBlocks(r, r.num_computed + n);
  return true;
}

// Longest run of cached full blocks matching the request's tokens, capped so that at
// least one token is computed (vLLM: max_cache_hit_length = num_tokens - 1).
std::vector<int> Engine::Impl::FindCachedPrefix(Req& r) {
  int max_blocks = (r.num_tokens() - 1) / profile_.block_size;
  EnsureHashes(r, max_blocks);
  std::vector<int> hits;
  for (int i = 0; i < max_blocks; ++i) {
    auto b = pool_.Lookup(r.hashes[i].key);
    if (!b) break;
    hits.push_back(*b);
  }
  return hits;
}

// Recompute preemption: free the blocks (still cached), forget computed tokens, and put
// the request back at the front of the waiting queue.
void Engine::Impl::Preempt(Req& r) {
  FreeBlocks(r);
  r.num_computed = 0;
  r.num_cached_blocks = 0;
  ++r.preemptions;
  ++metrics_.num_preemptions_total;
  r.state = Req::State::kWaiting;
  waiting_.push_front(&r);
}

void Engine::Impl::PromoteReady(Seconds now) {
  while (!pending_.empty() && pending_.begin()->first.first <= now) {
    Req* r = pending_.begin()->second;
    pending_.erase(pending_.begin());
    r->state = Req::State::kWaiting;
    waiting_.push_back(r);
  }
}

std::optional<Seconds> Engine::Impl::PlanStep(Seconds now) {
  if (planned_) return std::nullopt;  // contract violation: CompleteStep first
  last_time_ = std::max(last_time_, now);
  PromoteReady(now);
  scheduled_.clear();
  int budget = profile_.max_num_batched_tokens;
  bool preempted = false;

  // 1. Running requests, in priority order: decodes take 1 token, unfinished prefills
  //    a chunk of what is left of the budget.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Req* r = running_[i];
    int n = std::min(r->num_tokens() - r->num_computed, budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    bool ok = false;
    while (true) {
      if (AllocateSlots(*r, n)) {
        ok = true;
        break;
      }
      Req* victim = running_.back();  // lowest priority: scheduled last
      running_.pop_back();
      Preempt(*victim);
      preempted = true;
      if (victim == r) break;
    }
    if (!ok) break;
    bool decode = r->num_output > 0 && n == 1 && r->num_computed == r->num_tokens() - 1;
    scheduled_.push_back({r, n, r->num_computed, decode});
    budget -= n;
    ++i;
  }

  // 2. Waiting requests FCFS while budget, sequence slots and blocks last; none in a step
  //    that had to preempt (as vLLM).
  while (!preempted && !waiting_.empty() && budget > 0 &&
         static_cast<int>(running_.size()) < profile_.max_num_seqs) {
    Req* r = waiting_.front();
    const int bs = profile_.block_size;
    std::vector<int> hits = FindCachedPrefix(*r);
    int hit_tokens = static_cast<int>(hits.size()) * bs;
    int n = std::min(r->num_tokens() - hit_tokens, budget);
    int new_blocks = (hit_tokens + n + bs - 1) / bs - static_cast<int>(hits.size());
    int free_hits = static_cast<int>(
        std::count_if(hits.begin(), hits.end(), [this](int b) { return pool_.IsFree(b); }));
    if (new_blocks + free_hits > pool_.num_free_blocks()) break;
    pool_.Touch(hits);
    r->blocks = hits;
    pool_.Allocate(new_blocks, r->blocks);
    r->num_computed = hit_tokens;
    r->num_cached_blocks = static_cast<int>(hits.size());
    CacheFullBlocks(*r, hit_tokens + n);
    if (!r->scheduled_once) {
      r->scheduled_once = true;
      r->cached_tokens = hit_tokens;
      r->first_scheduled = now;
      metrics_.prefix_cache_queries_total += r->prompt_len;
      metrics_.prefix_cache_hits_total += hit_tokens;
      metrics_.request_queue_time_seconds.Observe(now - r->ready);
    }
    waiting_.pop_front();
    r->state = Req::State::kRunning;
    running_.push_back(r);
    scheduled_.push_back({r, n, hit_tokens, false});
    budget -= n;
  }

  UpdateGauges();
  if (scheduled_.empty()) {
    if (abort_outputs_.empty()) return std::nullopt;
    planned_ = true;
    plan_start_ = now;
    plan_duration_ = 0;
    return 0.0;
  }
  std::vector<std::pair<int, int>> chunks;
  std::vector<int> decode_ctx;
  for (const Scheduled& s : scheduled_) {
    if (s.is_decode) {
      decode_ctx.push_back(s.ctx_before + 1);
    } else {
      chunks.emplace_back(s.tokens, s.ctx_before);
    }
  }
  planned_ = true;
  plan_start_ = now;
  plan_duration_ = StepDuration(profile_, chunks, decode_ctx);
  return plan_duration_;
}

}  // namespace kinference::engine
