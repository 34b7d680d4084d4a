// Prices and the cost of one request.
//
// A price is four rates in nano-USD per million tokens (money.h), as providers publish
// them: input (uncached prompt tokens), cached_input (prompt tokens read from a prefix
// cache: OpenAI's prompt_tokens_details.cached_tokens, Anthropic's
// cache_read_input_tokens), cache_write (Anthropic's cache_creation_input_tokens) and
// output (completion tokens). A local vLLM pool is priced by the operator like any
// provider (e.g. what its GPUs cost per token).
//
// Token counts use the gateway's one internal shape, OpenAI's: prompt_tokens counts every
// input token, cached_tokens and cache_creation_tokens are parts of it. Anthropic's usage
// (input_tokens excludes both cache counts) is converted to it once, where it is parsed.
// The cost is then
//   (prompt - cached - cache_creation) * input + cached * cached_input
//     + cache_creation * cache_write + completion * output,   all / 1e6,
// so a cached token is billed once, at the cached price: never twice, never as full
// input, whichever front or provider kind carried the request, streamed or not. The sum
// is computed exactly in 1e-15 USD and rounded half up to nano-USD once per request.
//
// Lookup: the most specific entry wins: (provider, model), then (any provider, model),
// then (provider, any model), then (any, any). `provider` is a pool name (local vLLM) or
// a provider name (gateway config), `model` the served model name. No match: the
// request is unpriced (cost 0, UsageRecord::priced false, counted in /metrics).
//
// Config (accounting.prices; USD per million tokens; cached_input and cache_write default
// to input, i.e. no cache discount unless the operator states one):
//   - {model: gpt-4o, provider: openai, input: 2.50, cached_input: 1.25, output: 10}
//   - {model: "*", provider: pool-a, input: 0.10, output: 0.40}
//
// Thread-safety: PriceTable is immutable after construction; Cost is pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "accounting/money.h"

namespace kinference::accounting {

// Wildcard for PriceEntry::provider / model.
inline constexpr const char* kAny = "*";

struct Price {
  // nano-USD per million tokens.
  NanoUsd input = 0;
  NanoUsd cached_input = 0;
  NanoUsd cache_write = 0;
  NanoUsd output = 0;
};

struct PriceEntry {
  std::string provider = kAny;
  std::string model = kAny;
  Price price;
};

// Token counts of one request in the gateway's shape (see above). Tokens are int64:
// a request never comes near 2^31, but sums over records do.
struct TokenCounts {
  int64_t prompt = 0;          // every input token
  int64_t cached = 0;          // of prompt: read from a prefix cache
  int64_t cache_creation = 0;  // of prompt: written to a prompt cache (Anthropic)
  int64_t completion = 0;
  // prompt - cached - cache_creation, never below 0.
  int64_t uncached_input() const;
  bool operator==(const TokenCounts&) const = default;
};

// The cost of `tokens` at `price`, in nano-USD (see above). Inconsistent counts (cached +
// cache_creation > prompt, an upstream's bug) are clamped: the cached parts are billed
// as reported and no uncached input is billed.
NanoUsd Cost(const Price& price, const TokenCounts& tokens);

class PriceTable {
 public:
  PriceTable() = default;
  explicit PriceTable(std::vector<PriceEntry> entries);
  // The most specific entry for (provider, model); nullopt when none applies.
  std::optional<Price> Lookup(const std::string& provider, const std::string& model) const;
  const std::vector<PriceEntry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<PriceEntry> entries_;
};

}  // namespace kinference::accounting
