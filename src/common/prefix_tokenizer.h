// PrefixTokenizer: Tokenize (common/tokenizer.h) with the tokens of a recently tokenized
// text reused for the bytes a new text shares with it.
//
// Workloads send many prompts that start with the same long text (shared-prefix: 24
// prefixes of 16,000 tokens, each request adding a 256-token suffix); tokenizing every
// prompt in full was a quarter of the simulator's CPU time. The tokenizer scans left to
// right and decides each token from its own bytes plus at most kLookaheadBytes after them
// (a special token is 13 bytes), so when two texts agree on their first c bytes, every
// token of the earlier text that ends at or before c - kLookaheadBytes is also a token of
// the new one, with the same id; the rest is tokenized from that boundary.
//
// Result: Tokenize(text) returns exactly kinference::Tokenize(text), always (the cache
// changes the cost, never the ids). Texts are keyed by a hash of their first kKeyBytes
// bytes; the most recent text per key is kept, at most `max_entries` texts (all dropped
// when full). Memory: about 9 bytes per cached text byte (text, plus 4-byte id and 4-byte
// end per token of ~5 bytes). Texts shorter than kMinCachedBytes are tokenized directly.
//
// Thread-safety: none; one per thread (the simulator keeps one per run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/tokenizer.h"

namespace kinference {

class PrefixTokenizer {
 public:
  static constexpr size_t kLookaheadBytes = 16;  // >= 14 bytes a token's scan reads past it
  static constexpr size_t kKeyBytes = 256;
  static constexpr size_t kMinCachedBytes = 1024;

  explicit PrefixTokenizer(size_t max_entries = 64) : max_entries_(max_entries) {}

  // == kinference::Tokenize(text).
  std::vector<TokenId> Tokenize(std::string_view text);

  // Tokens taken from the cache rather than scanned, over the object's life (for tests
  // and profiling).
  uint64_t reused_tokens() const { return reused_tokens_; }
  size_t entries() const { return entries_.size(); }

 private:
  struct Entry {
    std::string text;
    std::vector<TokenId> ids;
    std::vector<uint32_t> ends;  // byte offset just past each token
  };
  size_t max_entries_;
  uint64_t reused_tokens_ = 0;
  std::unordered_map<uint64_t, Entry> entries_;
};

}  // namespace kinference
