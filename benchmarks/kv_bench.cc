// What the precise prefix index adds to a routing decision: tokenizing the rendered chat
// prompt (tokenizer/bpe.h), hashing its blocks as vLLM does (kv/block_hash.h), matching
// them (routing/precise_index.h); and the cost of decoding one KV-event batch.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "kv/block_hash.h"
#include "kv/event_codec.h"
#include "routing/precise_index.h"
#include "tokenizer/bpe.h"

namespace {

const std::string kModel =
    std::string(KINFERENCE_SOURCE_DIR) + "/tests/tokenizer/fixtures/tiny-qwen2";

// A chat prompt of about `words` words of mixed text (digits, accents, punctuation).
std::string Prompt(int words) {
  std::string s = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n";
  for (int i = 0; i < words; ++i) s += "word" + std::to_string(i % 97) + " número ünïcödé, ";
  return s + "<|im_end|>\n<|im_start|>assistant\n";
}

void BM_Tokenize(benchmark::State& state) {
  auto tok = kinference::tokenizer::BpeTokenizer::FromModelDir(kModel);
  if (!tok.ok()) {
    state.SkipWithError(tok.status().message().c_str());
    return;
  }
  const std::string text = Prompt(static_cast<int>(state.range(0)));
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = (*tok)->Encode(text);
    tokens += ids.size();
    benchmark::DoNotOptimize(ids);
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Tokenize)->Arg(50)->Arg(1000)->Arg(8000);

void BM_BlockKeys(benchmark::State& state) {
  kinference::kv::BlockHasher hasher;
  std::vector<uint32_t> tokens(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>((i * 7919) % 150000);
  for (auto _ : state) benchmark::DoNotOptimize(hasher.BlockKeys(tokens, 128));
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * tokens.size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BlockKeys)->Arg(1024)->Arg(16384);

void BM_PreciseMatch(benchmark::State& state) {
  kinference::routing::PreciseIndex index;
  kinference::kv::BlockStored s;
  const size_t blocks = static_cast<size_t>(state.range(0));
  for (size_t i = 0; i < blocks; ++i) s.block_hashes.push_back(i * 0x9e3779b97f4a7c15ULL);
  s.token_ids.assign(blocks * 16, 1);
  s.block_size = 16;
  index.Apply(s);
  for (auto _ : state) benchmark::DoNotOptimize(index.Match(s.block_hashes));
}
BENCHMARK(BM_PreciseMatch)->Arg(128)->Arg(1024);

void BM_DecodeBatch(benchmark::State& state) {
  kinference::kv::EventBatch b;
  kinference::kv::BlockStored s;
  for (uint64_t i = 0; i < 16; ++i) s.block_hashes.push_back(~i);
  s.token_ids.assign(16 * 128, 12345);
  s.block_size = 128;
  s.medium = "GPU";
  b.events.push_back(s);
  const std::string wire = kinference::kv::EncodeBatch(b);
  for (auto _ : state) benchmark::DoNotOptimize(kinference::kv::DecodeBatch(wire));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire.size()));
}
BENCHMARK(BM_DecodeBatch);

}  // namespace

BENCHMARK_MAIN();
