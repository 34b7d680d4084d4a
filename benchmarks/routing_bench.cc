// Routing core microbenchmarks: Pick latency with 3, 64 and 1,000 endpoints and long
// prompts (16k tokens ~ 100k characters), the whole routing decision for a 64k-character
// prompt (hashing its blocks + Pick; issue #16's target: <= 50 us over 64 endpoints),
// hashing such a prompt, and one request's bookkeeping.
#include <benchmark/benchmark.h>

#include <string>

#include "routing/router.h"

namespace kinference::routing {
namespace {

constexpr size_t kPromptChars = 100'000;

std::string Prompt(uint64_t seed, size_t chars) {
  std::string s(chars, ' ');
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (size_t i = 0; i < chars; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    if (i % 6 != 5) s[i] = static_cast<char>('a' + (x >> 59));
  }
  return s;
}

RequestFeatures Features(const std::string& id, const std::string& text) {
  RequestFeatures f;
  f.request_id = id;
  f.model = "m";
  f.block_hashes = ChainedBlockHashes(text, 128);
  f.prompt_chars = text.size();
  return f;
}

// A router with `n` endpoints, each scraped and holding a few long prompts, some of
// them sharing a system prompt with the benchmarked request (`chars` characters long).
struct Setup {
  Router router{RouterConfig{}};
  RequestFeatures request;
  std::string request_text;
  explicit Setup(int n, size_t chars = kPromptChars) {
    std::string system = Prompt(1, chars / 2);
    MetricsSnapshot m;
    m.num_requests_running = 4;
    m.num_requests_waiting = 2;
    m.block_size = 16;
    m.num_gpu_blocks = 30000;
    for (int i = 0; i < n; ++i) {
      std::string id = "pool/" + std::to_string(i);
      router.AddEndpoint({id, "m", "pool"}, 0);
      router.ObserveMetrics(id, m, 0);
      for (int k = 0; k < 4; ++k) {
        std::string text =
            (k == 0 && i % 2 == 0 ? system : Prompt(100 + i * 10 + k, kPromptChars / 2)) +
            Prompt(1000 + i * 10 + k, kPromptChars / 2);
        auto f = Features(id + "-" + std::to_string(k), text);
        EndpointId one[] = {id};
        auto d = router.Pick(f, one, "", 0);
        router.OnDispatched(f, *d, 0);  // left in flight: a queue to estimate
      }
    }
    request_text = system + Prompt(7, chars - chars / 2);
    request = Features("bench", request_text);
  }
};

void BM_Pick(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto d = s.router.Pick(s.request, {}, "", 1.0);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_Pick)->Arg(3)->Arg(64)->Arg(1000)->Unit(benchmark::kMicrosecond);

// The gateway's routing decision for one request: the block hashes of its rendered
// 64k-character prompt, then Pick over `n` endpoints.
void BM_Decision64kChars(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)), 64'000);
  for (auto _ : state) {
    RequestFeatures f;
    f.request_id = "bench";
    f.model = "m";
    f.block_hashes = ChainedBlockHashes(s.request_text, 128);
    f.prompt_chars = s.request_text.size();
    auto d = s.router.Pick(f, {}, "", 1.0);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_Decision64kChars)->Arg(64)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_ChainedBlockHashes(benchmark::State& state) {
  std::string text = Prompt(3, kPromptChars);
  for (auto _ : state) benchmark::DoNotOptimize(ChainedBlockHashes(text, 128));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ChainedBlockHashes)->Unit(benchmark::kMicrosecond);

// Pick + dispatch + first token + finish of one long request on 64 endpoints.
void BM_RequestLifecycle(benchmark::State& state) {
  Setup s(64);
  Seconds now = 1.0;
  for (auto _ : state) {
    auto d = s.router.Pick(s.request, {}, "", now);
    s.router.OnDispatched(s.request, *d, now);
    s.router.OnFirstToken(s.request.request_id, now + 0.5);
    s.router.OnFinished(s.request.request_id, Usage{16000, 8000, 100}, Outcome::kSuccess,
                        now + 1.0);
    now += 1.0;
  }
}
BENCHMARK(BM_RequestLifecycle)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kinference::routing

BENCHMARK_MAIN();
