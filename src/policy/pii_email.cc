// E-mail detection for the pii tagger: plain addresses and the usual obfuscations
// (policy/pii.h lists the accepted forms).
#include <algorithm>
#include <array>
#include <cctype>

#include "policy/pii.h"

namespace kinference::policy {
namespace {

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool EmailLocalChar(char c) {
  return IsAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}
bool LabelChar(char c) { return IsAlnum(c) || c == '-'; }

bool IEquals(std::string_view t, size_t i, std::string_view word) {
  if (i + word.size() > t.size()) return false;
  for (size_t k = 0; k < word.size(); ++k) {
    if (std::tolower(static_cast<unsigned char>(t[i + k])) != word[k]) return false;
  }
  return true;
}

size_t SkipSpaces(std::string_view t, size_t i) {
  while (i < t.size() && IsSpace(t[i])) ++i;
  return i;
}

// A marker for `symbol` ('@' or '.') or `word` ("at", "dot") at t[i]: its length and whether
// it is the bare word (which needs spaces around it), or 0. Bracketed: [x] (x) {x} <x>.
struct Marker {
  size_t len = 0;
  bool word = false;
};
Marker MarkerAt(std::string_view t, size_t i, char symbol, std::string_view word) {
  if (i >= t.size()) return {};
  if (t[i] == symbol) return {1, false};
  static constexpr std::string_view kOpen = "[({<", kClose = "])}>";
  size_t open = kOpen.find(t[i]);
  if (open != std::string_view::npos) {
    size_t j = SkipSpaces(t, i + 1);
    size_t inner = 0;
    if (j < t.size() && t[j] == symbol) {
      inner = 1;
    } else if (IEquals(t, j, word)) {
      inner = word.size();
    }
    if (inner == 0) return {};
    j = SkipSpaces(t, j + inner);
    if (j < t.size() && t[j] == kClose[open]) return {j + 1 - i, false};
    return {};
  }
  if (IEquals(t, i, word) && (i + word.size() >= t.size() || !IsAlpha(t[i + word.size()])) &&
      (i == 0 || !IsAlpha(t[i - 1]))) {
    return {word.size(), true};
  }
  return {};
}

// The domain after an at-marker, from t[i]: labels joined by dot-markers, ending in an
// alphabetic TLD of 2-24 letters. Sets `obfuscated` when a dot-marker is not a bare '.'.
bool DomainAt(std::string_view t, size_t i, bool& obfuscated) {
  int dots = 0;
  size_t last_label = 0, last_len = 0;
  for (;;) {
    size_t l = i;
    while (i < t.size() && LabelChar(t[i])) ++i;
    if (i == l || !IsAlnum(t[l])) break;
    last_label = l;
    last_len = i - l;
    // A dot-marker: bare '.' unspaced, or spaced on both sides; bracketed forms with any
    // spacing; the word "dot" with spaces on both sides.
    size_t j = SkipSpaces(t, i);
    bool spaced_before = j > i;
    Marker m = MarkerAt(t, j, '.', "dot");
    if (m.len == 0) break;
    size_t k = SkipSpaces(t, j + m.len);
    bool spaced_after = k > j + m.len;
    bool bare_dot = !m.word && m.len == 1;
    if (bare_dot && spaced_before != spaced_after) break;
    if (m.word && (!spaced_before || !spaced_after)) break;
    if (k >= t.size() || !IsAlnum(t[k])) break;
    if (!bare_dot || spaced_before) obfuscated = true;
    ++dots;
    i = k;
  }
  if (dots == 0 || last_len < 2 || last_len > 24) return false;
  return std::all_of(t.begin() + last_label, t.begin() + last_label + last_len, IsAlpha);
}

// Characters an at-marker can start with: '@', an opening bracket, or 'a' of "at".
constexpr std::array<bool, 256> kMarkerStart = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : std::string_view("@[({<aA")) t[c] = true;
  return t;
}();

}  // namespace

bool HasEmail(std::string_view t) {
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (!kMarkerStart[static_cast<unsigned char>(c)]) continue;
    if ((c == 'a' || c == 'A') && (i + 1 >= t.size() || (t[i + 1] | 0x20) != 't')) continue;
    Marker at = MarkerAt(t, i, '@', "at");
    if (at.len == 0) continue;
    // The local part just before the marker (spaces allowed between).
    size_t end = i;
    while (end > 0 && IsSpace(t[end - 1])) --end;
    bool spaced_before = end < i;
    size_t begin = end;
    while (begin > 0 && EmailLocalChar(t[begin - 1])) --begin;
    if (begin == end) continue;
    size_t d = SkipSpaces(t, i + at.len);
    bool spaced_after = d > i + at.len;
    // The word needs spaces on both sides; a bare '@' none or both ("hi @bob.dev" is a
    // mention, not an address).
    if (at.word ? !(spaced_before && spaced_after)
                : (at.len == 1 && spaced_before != spaced_after)) {
      continue;
    }
    bool dot_obfuscated = false;
    if (!DomainAt(t, d, dot_obfuscated)) continue;
    if (at.word && !dot_obfuscated) {
      // "look at example.com" is prose; "j.doe at example.com" is an address.
      std::string_view local = t.substr(begin, end - begin);
      bool marked = std::any_of(local.begin(), local.end(), [](char ch) {
        return !std::isalpha(static_cast<unsigned char>(ch));
      });
      if (!marked) continue;
    }
    return true;
  }
  return false;
}

}  // namespace kinference::policy
