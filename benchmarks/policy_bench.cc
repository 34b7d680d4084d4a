// InferencePolicy microbenchmarks: what policies add to a request's path in the gateway:
// the text taggers scan (every string of the body), the built-in taggers over a long
// prompt, and evaluating the shipped example policies against 8 candidates.
#include <benchmark/benchmark.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "policy/evaluate.h"
#include "policy/policy.h"
#include "policy/request_text.h"
#include "policy/taggers.h"

namespace kinference::policy {
namespace {

// Words and digits, no PII: the taggers' worst case is text they must read to the end.
std::string Text(size_t chars) {
  std::string s;
  s.reserve(chars + 16);
  uint64_t x = 7;
  while (s.size() < chars) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    if ((x >> 60) == 0)
      s += std::to_string(x >> 40 & 0xffff) + " ";  // short numbers, as prose has
    else
      s += std::string(1 + (x >> 61), static_cast<char>('a' + (x >> 56) % 26)) + " ";
  }
  return s;
}

// A chat body of ~`chars` characters: system prompt, user turn, one tool.
boost::json::object ChatBody(size_t chars) {
  boost::json::array messages{boost::json::object{{"role", "system"}, {"content", Text(chars / 2)}},
                              boost::json::object{{"role", "user"}, {"content", Text(chars / 2)}}};
  boost::json::array tools{boost::json::object{
      {"type", "function"},
      {"function", boost::json::object{{"name", "lookup"}, {"description", "Look a thing up"}}}}};
  return boost::json::object{{"model", "m"}, {"messages", messages}, {"tools", tools}};
}

void BM_ScanText(benchmark::State& state) {
  boost::json::object body = ChatBody(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(RequestScanText(body));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ScanText)->Arg(4'000)->Arg(100'000);

void BM_RunTaggers(benchmark::State& state) {
  std::string text = Text(static_cast<size_t>(state.range(0)));
  TaggerConfig config;
  for (auto _ : state) {
    TaggerInput in;
    in.text = text;
    benchmark::DoNotOptimize(RunTaggers(config, in));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_RunTaggers)->Arg(4'000)->Arg(100'000);

// Text that needs normalising: the same prose with a non-ASCII word (ICU NFKC and the
// per-code-point mapping run), an HTML entity and a percent sign every ~60 characters.
void BM_RunTaggersNonAscii(benchmark::State& state) {
  std::string text;
  std::string plain = Text(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < plain.size(); i += 60) {
    text += plain.substr(i, 60);
    text += (i / 60) % 3 == 0   ? "caf\xC3\xA9 \xD0\xB4\xD0\xB0 "
            : (i / 60) % 3 == 1 ? "&amp; "
                                : "50% ";
  }
  TaggerConfig config;
  for (auto _ : state) {
    TaggerInput in;
    in.text = text;
    benchmark::DoNotOptimize(RunTaggers(config, in));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_RunTaggersNonAscii)->Arg(4'000)->Arg(100'000);

// Text in another script throughout (Russian words, Cyrillic letters only): every
// character takes the Unicode step, and each has a confusable skeleton looked up (cached
// per code point after the first).
void BM_RunTaggersCyrillic(benchmark::State& state) {
  static constexpr const char* kWords[] = {"\u043F\u0440\u0438\u0432\u0435\u0442",
                                           "\u043A\u0430\u043A",
                                           "\u0434\u0435\u043B\u0430",
                                           "\u0432\u0441\u0442\u0440\u0435\u0447\u0430",
                                           "\u0437\u0430\u0432\u0442\u0440\u0430",
                                           "\u041E\u041E\u041E",
                                           "\u0440\u043E\u043C\u0430\u0448\u043A\u0430",
                                           "\u0432"};
  std::string text;
  for (size_t i = 0; text.size() < static_cast<size_t>(state.range(0)); ++i) {
    text += kWords[(i * 7 + i / 8) % 8];
    text += i % 9 == 8 ? ". " : " ";
  }
  TaggerConfig config;
  for (auto _ : state) {
    TaggerInput in;
    in.text = text;
    benchmark::DoNotOptimize(RunTaggers(config, in));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_RunTaggersCyrillic)->Arg(4'000)->Arg(100'000);

// The whole tagger input of a chat body: its scan (values included) and the pii tagger
// with the split-value windows between neighbouring values and between each role's
// consecutive turns (40 messages, alternating user and assistant).
void BM_ScanAndTagChat(benchmark::State& state) {
  boost::json::array messages;
  size_t per = static_cast<size_t>(state.range(0)) / 40;
  for (int i = 0; i < 40; ++i) {
    messages.push_back(
        boost::json::object{{"role", i % 2 ? "assistant" : "user"}, {"content", Text(per)}});
  }
  boost::json::object body{{"model", "m"}, {"messages", messages}};
  TaggerConfig config;
  for (auto _ : state) {
    RequestScan scan = ScanRequest(body);
    TaggerInput in;
    in.text = scan.text;
    in.values = scan.values;
    in.role_values = scan.role_values;
    benchmark::DoNotOptimize(RunTaggers(config, in));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ScanAndTagChat)->Arg(4'000)->Arg(100'000);

void BM_EvaluateExamples(benchmark::State& state) {
  auto set = LoadPolicySet(std::vector<std::string>{
      KINFERENCE_SOURCE_DIR "/examples/policies/simple-cheaper-model.yaml",
      KINFERENCE_SOURCE_DIR "/examples/policies/local-queue-before-providers.yaml",
      KINFERENCE_SOURCE_DIR "/examples/policies/pii-local-only.yaml"});
  if (!set.ok()) {
    state.SkipWithError(set.status().message().c_str());
    return;
  }
  std::vector<Candidate> candidates;
  for (const auto& p : set->policies)
    for (const auto& a : p.alternatives) {
      Candidate c;
      c.endpoint = a.model + "/0";
      c.model = a.model;
      c.pool = a.model;
      c.queue_depth = 1;
      c.kv_cache_usage = 0.5;
      c.metrics_age_s = 1;
      c.predicted_ttft_s = 0.4;
      candidates.push_back(c);
    }
  std::vector<std::string> models;
  for (const auto& p : set->policies)
    for (const auto& m : p.match.models) models.push_back(m);
  const std::string model = models.empty() ? "m" : models.front();
  for (int i = 0; i < 6; ++i) {
    Candidate c;
    c.endpoint = "local/" + std::to_string(i);
    c.model = model;
    c.pool = "local";
    c.queue_depth = i * 3;
    c.kv_cache_usage = 0.1 * i;
    c.metrics_age_s = 1;
    c.predicted_ttft_s = 0.2 * i;
    candidates.push_back(c);
  }
  Candidate provider;
  provider.endpoint = "provider/openai";
  provider.model = model;
  provider.cls = EndpointClass::kProvider;
  provider.provider = "openai";
  provider.predicted_ttft_s = 0.8;
  candidates.push_back(provider);
  RequestInfo req;
  req.tenant = "acme";
  req.model = model;
  req.tags = {"simple"};
  req.prompt_tokens = 100;
  for (auto _ : state) benchmark::DoNotOptimize(Evaluate(*set, req, candidates));
}
BENCHMARK(BM_EvaluateExamples);

}  // namespace
}  // namespace kinference::policy
BENCHMARK_MAIN();
