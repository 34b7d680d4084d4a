// Tokenizer: the deterministic stand-in tokenizer of engine-sim and of the workloads.
//
// A real vLLM replica tokenizes with the model's BPE tokenizer; engine-sim needs one that
// is deterministic, fast, documented and *prefix-stable* (tokenizing a + b gives
// tokenize(a) followed by tokenize(b) whenever a ends where a token ends), so that
// multi-turn conversations share token prefixes the way they do on vLLM.
//
// Rules, applied left to right (modelled on GPT-2's pre-tokenizer pattern
// ` ?\S+|\s+(?!\S)|\s+`, with words capped at 8 bytes):
//   1. A special token (`<|im_start|>`, `<|im_end|>`, `<|endoftext|>`) is one token.
//   2. One optional space (0x20) followed by 1..8 non-whitespace bytes is one token
//      (a longer run of non-whitespace continues as further tokens of up to 8 bytes,
//      without the space). A run stops early before a special token.
//   3. A run of whitespace is one token, except that a final space directly before a
//      non-whitespace byte is left to rule 2.
// Token id: the low 31 bits of XXH3-64 of the token's bytes (ids are only compared and
// hashed, never looked up). Consequence used by the workloads: the text
// " w1 w2 ... wN", with every wi 1..8 non-space bytes, is exactly N tokens.
//
// Thread-safety: stateless free functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kinference {

using TokenId = uint32_t;

// Token ids of `text`.
std::vector<TokenId> Tokenize(std::string_view text);
// Number of tokens in `text`, without materialising them.
size_t CountTokens(std::string_view text);
// Token boundaries: the byte length of each token, in order; sums to text.size().
std::vector<uint32_t> TokenLengths(std::string_view text);

// A word of 1..8 lower-case alphanumerics, fixed by (seed, index); " " + word is one
// token. Used to make prompt and output text of an exact token count.
std::string SyntheticWord(uint64_t seed, uint64_t index);
// " w0 w1 ... w(n-1)": exactly n tokens, fixed by seed.
std::string SyntheticText(uint64_t seed, size_t n_tokens);

}  // namespace kinference
