// Engine model throughput: steps per second of a busy engine (l40s-27b-fp8 profile).
// A closed loop keeps `concurrency` requests in flight (1,000-token prompts sharing a
// 512-token prefix, 128 output tokens); every finished request is replaced at once.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "common/tokenizer.h"
#include "engine/engine.h"

namespace kinference::engine {
namespace {

void BM_BusyEngineSteps(benchmark::State& state) {
  const int concurrency = static_cast<int>(state.range(0));
  Engine e(*ProfileByName("l40s-27b-fp8"));
  std::vector<TokenId> shared = Tokenize(SyntheticText(1, 512));
  uint64_t next_id = 0;
  Seconds now = 0;
  auto add = [&](Seconds t) {
    EngineRequest r;
    r.id = std::to_string(next_id);
    r.prompt = shared;
    std::vector<TokenId> tail = Tokenize(SyntheticText(1000 + next_id, 488));
    r.prompt.insert(r.prompt.end(), tail.begin(), tail.end());
    r.max_tokens = 128;
    r.ignore_eos = true;
    r.seed = next_id++;
    r.arrival = t;
    (void)e.AddRequest(std::move(r));
  };
  for (int i = 0; i < concurrency; ++i) add(0);
  int64_t steps = 0, tokens = 0;
  for (auto _ : state) {
    auto d = e.PlanStep(now);
    if (!d) {
      now = e.NextReadyTime().value_or(now);
      continue;
    }
    StepOutput out = e.CompleteStep();
    now = out.end;
    ++steps;
    tokens += static_cast<int64_t>(out.tokens.size());
    for (size_t i = 0; i < out.finished.size(); ++i) add(now);
    benchmark::DoNotOptimize(out);
  }
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["tokens_per_step"] =
      steps ? static_cast<double>(tokens) / static_cast<double>(steps) : 0;
}
BENCHMARK(BM_BusyEngineSteps)->Arg(16)->Arg(64)->Arg(256);

}  // namespace
}  // namespace kinference::engine

BENCHMARK_MAIN();
