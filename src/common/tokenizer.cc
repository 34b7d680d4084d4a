#include "common/tokenizer.h"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "common/prefix_tokenizer.h"

namespace kinference {
namespace {

constexpr std::array<std::string_view, 3> kSpecialTokens = {"<|im_start|>", "<|im_end|>",
                                                            "<|endoftext|>"};
constexpr size_t kMaxWordBytes = 8;

// std::isspace in the "C" locale (the process never sets another): space, \t \n \v \f \r.
// Inline rather than the libc call, which was a tenth of the simulator's time.
bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Inline: called for every byte of a word (the '<' test is the common exit).
inline size_t SpecialAt(std::string_view text, size_t pos) {
  if (text[pos] != '<') [[likely]]
    return 0;
  for (auto s : kSpecialTokens) {
    if (text.substr(pos, s.size()) == s) return s.size();
  }
  return 0;
}

// Length in bytes of the token starting at `pos`.
size_t NextTokenLength(std::string_view text, size_t pos) {
  if (size_t n = SpecialAt(text, pos)) return n;
  size_t i = pos;
  if (text[i] == ' ' && i + 1 < text.size() && !IsSpace(text[i + 1]) &&
      SpecialAt(text, i + 1) == 0) {
    ++i;  // rule 2: one leading space joins the word
  }
  if (!IsSpace(text[i])) {
    size_t start = i;
    while (i < text.size() && !IsSpace(text[i]) && i - start < kMaxWordBytes &&
           (i == start || text[i] != '<' || SpecialAt(text, i) == 0)) {
      ++i;
    }
    return i - pos;
  }
  // rule 3: whitespace run; leave a final space before a word to that word.
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (i < text.size() && i - pos > 1 && text[i - 1] == ' ' && SpecialAt(text, i) == 0) --i;
  return i - pos;
}

TokenId IdOf(std::string_view piece) {
  return static_cast<TokenId>(XXH3_64bits(piece.data(), piece.size()) & 0x7fffffffu);
}

}  // namespace

std::vector<TokenId> Tokenize(std::string_view text) {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 4 + 1);
  for (size_t pos = 0; pos < text.size();) {
    size_t n = NextTokenLength(text, pos);
    ids.push_back(IdOf(text.substr(pos, n)));
    pos += n;
  }
  return ids;
}

size_t CountTokens(std::string_view text) {
  size_t count = 0;
  for (size_t pos = 0; pos < text.size(); ++count) pos += NextTokenLength(text, pos);
  return count;
}

std::vector<uint32_t> TokenLengths(std::string_view text) {
  std::vector<uint32_t> lengths;
  for (size_t pos = 0; pos < text.size();) {
    size_t n = NextTokenLength(text, pos);
    lengths.push_back(static_cast<uint32_t>(n));
    pos += n;
  }
  return lengths;
}

namespace {

// Length of the common prefix of a and b.
size_t CommonPrefix(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  constexpr size_t kChunk = 256;
  size_t i = 0;
  while (i + kChunk <= n && std::memcmp(a.data() + i, b.data() + i, kChunk) == 0) i += kChunk;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

// Here rather than in its own file: it resumes the scan of NextTokenLength.
std::vector<TokenId> PrefixTokenizer::Tokenize(std::string_view text) {
  if (text.size() < kMinCachedBytes || text.size() > UINT32_MAX || max_entries_ == 0)
    return kinference::Tokenize(text);
  const uint64_t key = XXH3_64bits(text.data(), kKeyBytes);
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 4 + 1);
  size_t pos = 0, k = 0;
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    const Entry& old = it->second;
    const size_t common = CommonPrefix(old.text, text);
    if (common > kLookaheadBytes) {
      // Tokens ending at or before `safe` were decided by bytes both texts share.
      const size_t safe = common - kLookaheadBytes;
      k = static_cast<size_t>(
          std::upper_bound(old.ends.begin(), old.ends.end(), static_cast<uint32_t>(safe)) -
          old.ends.begin());
      ids.assign(old.ids.begin(), old.ids.begin() + static_cast<std::ptrdiff_t>(k));
      pos = k > 0 ? old.ends[k - 1] : 0;
      reused_tokens_ += k;
    }
  }
  // Keep the cached text when it served most of this one (shared-prefix: the prefix);
  // otherwise this text replaces it, and its token ends are recorded.
  const bool keep = it != entries_.end() && 2 * pos >= text.size();
  std::vector<uint32_t> ends;
  if (!keep) {
    ends.reserve(text.size() / 4 + 1);
    if (k > 0)
      ends.assign(it->second.ends.begin(),
                  it->second.ends.begin() + static_cast<std::ptrdiff_t>(k));
  }
  while (pos < text.size()) {
    const size_t n = NextTokenLength(text, pos);
    ids.push_back(IdOf(text.substr(pos, n)));
    pos += n;
    if (!keep) ends.push_back(static_cast<uint32_t>(pos));
  }
  if (!keep) {
    if (entries_.size() >= max_entries_ && it == entries_.end()) entries_.clear();
    entries_[key] = Entry{std::string(text), ids, std::move(ends)};
  }
  return ids;
}

std::string SyntheticWord(uint64_t seed, uint64_t index) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  uint64_t key[2] = {seed, index};
  uint64_t h = XXH3_64bits(key, sizeof(key));
  size_t len = 2 + h % 6;  // 2..7 bytes
  h /= 6;
  std::string w(len, 'a');
  for (size_t i = 0; i < len; ++i) {
    w[i] = kAlphabet[h % 36];
    h /= 36;
    if (h == 0) h = XXH3_64bits(&h, sizeof(h)) | 1;
  }
  return w;
}

std::string SyntheticText(uint64_t seed, size_t n_tokens) {
  std::string out;
  out.reserve(n_tokens * 6);
  for (size_t i = 0; i < n_tokens; ++i) {
    out.push_back(' ');
    out += SyntheticWord(seed, i);
  }
  return out;
}

}  // namespace kinference
