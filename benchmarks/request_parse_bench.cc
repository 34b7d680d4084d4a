// The body work of one request on the gateway's path, front by front: parse (and, for
// POST /v1/messages, translate to the equivalent chat completion), render the routing
// text, build the text taggers scan (only when a policy needs tags), and serialise the
// body sent upstream (a non-streamed client request goes upstream as a stream, the
// default `upstream_streaming: always`; an Anthropic provider gets the client's own
// body with its model replaced). Bodies: a multi-turn conversation with a tool, of
// ~4 KB and ~100 KB of JSON.
#include <benchmark/benchmark.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <string>

#include "api/anthropic/messages_request.h"
#include "api/anthropic/upstream_request.h"
#include "api/openai/request.h"
#include "api/openai/stream_assembler.h"
#include "policy/request_text.h"

namespace kinference::api {
namespace {

namespace json = boost::json;

// Words and short numbers (no PII), deterministic.
std::string Text(size_t chars) {
  std::string s;
  s.reserve(chars + 16);
  uint64_t x = 11;
  while (s.size() < chars) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    if ((x >> 60) == 0)
      s += std::to_string(x >> 40 & 0xffff) + " ";
    else
      s += std::string(1 + (x >> 61), static_cast<char>('a' + (x >> 56) % 26)) + " ";
  }
  return s;
}

constexpr int kTurns = 8;

// POST /v1/chat/completions: system prompt, kTurns user/assistant turns, one tool; about
// `bytes` of JSON in all.
std::string ChatBody(size_t bytes) {
  const size_t per = bytes / (2 * kTurns + 1);
  json::array messages{json::object{{"role", "system"}, {"content", Text(per)}}};
  for (int i = 0; i < kTurns; ++i) {
    messages.push_back(json::object{{"role", "user"}, {"content", Text(per)}});
    messages.push_back(json::object{{"role", "assistant"}, {"content", Text(per)}});
  }
  messages.push_back(json::object{{"role", "user"}, {"content", "and now?"}});
  json::array tools{
      json::object{{"type", "function"},
                   {"function", json::object{{"name", "lookup"},
                                             {"description", "Look a thing up"},
                                             {"parameters", json::object{{"type", "object"}}}}}}};
  return json::serialize(
      json::object{{"model", "m"}, {"max_tokens", 256}, {"messages", messages}, {"tools", tools}});
}

// POST /v1/messages: the same conversation in the Messages API's shape (text blocks).
std::string MessagesBody(size_t bytes) {
  const size_t per = bytes / (2 * kTurns + 1);
  json::array messages;
  for (int i = 0; i < kTurns; ++i) {
    messages.push_back(json::object{
        {"role", "user"},
        {"content", json::array{json::object{{"type", "text"}, {"text", Text(per)}}}}});
    messages.push_back(json::object{{"role", "assistant"}, {"content", Text(per)}});
  }
  messages.push_back(json::object{{"role", "user"}, {"content", "and now?"}});
  json::array tools{json::object{{"name", "lookup"},
                                 {"description", "Look a thing up"},
                                 {"input_schema", json::object{{"type", "object"}}}}};
  return json::serialize(json::object{{"model", "m"},
                                      {"max_tokens", 256},
                                      {"system", Text(per)},
                                      {"messages", messages},
                                      {"tools", tools}});
}

void BM_ChatCompletionsBody(benchmark::State& state) {
  const std::string body = ChatBody(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto r = ParseRequest(ApiKind::kChatCompletions, body);
    std::string scan = policy::RequestScanText(r->body);
    std::string upstream = StreamedUpstreamBody(*r);
    benchmark::DoNotOptimize(scan);
    benchmark::DoNotOptimize(upstream);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_ChatCompletionsBody)->Arg(4'000)->Arg(100'000);

// /v1/messages to a vLLM endpoint (translated).
void BM_MessagesBody(benchmark::State& state) {
  const std::string body = MessagesBody(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto p = anthropic::ParseMessages(body);
    std::string scan = policy::RequestScanText(p->request.original);
    std::string upstream = StreamedUpstreamBody(p->request);
    benchmark::DoNotOptimize(scan);
    benchmark::DoNotOptimize(upstream);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_MessagesBody)->Arg(4'000)->Arg(100'000);

// /v1/messages to an Anthropic provider (the client's body, passed through natively).
void BM_MessagesNativeBody(benchmark::State& state) {
  const std::string body = MessagesBody(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto p = anthropic::ParseMessages(body);
    std::string scan = policy::RequestScanText(p->request.original);
    auto upstream = anthropic::NativeRequestBody(p->request.original, "claude-x");
    benchmark::DoNotOptimize(scan);
    benchmark::DoNotOptimize(upstream);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_MessagesNativeBody)->Arg(4'000)->Arg(100'000);

}  // namespace
}  // namespace kinference::api

BENCHMARK_MAIN();
