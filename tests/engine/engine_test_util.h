// Test helpers for the engine model: tiny profiles and a virtual-time driver loop.
// Thread-safety: single-threaded test code.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/tokenizer.h"
#include "engine/engine.h"

namespace kinference::engine::testing {

// A small profile with round-number costs: 10 ms per step, 1 ms per prefill token,
// 10 ms per decode step; no front-end delay.
inline HardwareProfile TinyProfile(int num_gpu_blocks) {
  HardwareProfile p;
  p.name = "tiny";
  p.model_name = "tiny-model";
  p.num_gpu_blocks = num_gpu_blocks;
  p.step_overhead_s = 0.01;
  p.prefill_s_per_token = 0.001;
  p.decode_base_s = 0.01;
  return p;
}

inline std::vector<TokenId> Tokens(uint64_t seed, size_t n) {
  return Tokenize(SyntheticText(seed, n));
}

inline EngineRequest Req(std::string id, std::vector<TokenId> prompt, int max_tokens,
                         Seconds arrival = 0, bool ignore_eos = true, uint64_t seed = 7) {
  EngineRequest r;
  r.id = std::move(id);
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.ignore_eos = ignore_eos;
  r.seed = seed;
  r.arrival = arrival;
  return r;
}

// Everything the engine produced while driven to idle.
struct RunLog {
  std::vector<StepOutput> steps;
  std::map<std::string, FinishedRequest> finished;
  std::map<std::string, std::vector<TokenEvent>> tokens;
  Seconds end = 0;
};

// Drives the engine from `now` until it has no work, jumping over front-end delays.
// `on_step` (optional) sees each step output; it may add or abort requests.
inline RunLog RunToIdle(Engine& e, Seconds now,
                        const std::function<void(const StepOutput&)>& on_step = {}) {
  RunLog log;
  for (int guard = 0; guard < 1000000 && e.HasWork(); ++guard) {
    auto d = e.PlanStep(now);
    if (!d) {
      auto next = e.NextReadyTime();
      if (!next) break;
      now = *next;
      continue;
    }
    StepOutput out = e.CompleteStep();
    now = out.end;
    for (const auto& t : out.tokens) log.tokens[t.request_id].push_back(t);
    for (const auto& f : out.finished) log.finished[f.request_id] = f;
    if (on_step) on_step(out);
    log.steps.push_back(std::move(out));
  }
  log.end = now;
  return log;
}

}  // namespace kinference::engine::testing
