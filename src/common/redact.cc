#include "common/redact.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace kinference {
namespace {

bool KeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
}
bool TokenChar(char c) {
  return KeyChar(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '=';
}
char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool IStartsWith(std::string_view s, size_t i, std::string_view word) {
  if (i + word.size() > s.size()) return false;
  for (size_t k = 0; k < word.size(); ++k) {
    if (Lower(s[i + k]) != word[k]) return false;
  }
  return true;
}

void ReplaceAll(std::string& s, std::string_view secret) {
  if (secret.size() < 8) return;
  for (size_t p = s.find(secret); p != std::string::npos;
       p = s.find(secret, p + kRedacted.size())) {
    s.replace(p, secret.size(), kRedacted);
  }
}

// Scans `s` once; at each position the first rule that matches replaces its span.
std::string Rules(const std::string& s) {
  struct Prefix {
    std::string_view text;
    size_t min_after, max_after;
  };
  static constexpr std::array<Prefix, 4> kPrefixes{
      {{"sk-", 20, 512}, {"akia", 16, 16}, {"aiza", 35, 35}, {"xoxb-", 20, 512}}};
  static constexpr std::array<std::string_view, 11> kNames{
      "x-api-key", "api_key", "api-key", "apikey", "authorization", "access_token",
      "password",  "passwd",  "secret",  "token",  "client_secret"};
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  auto boundary = [&](size_t k) { return k == 0 || !KeyChar(s[k - 1]); };
  while (i < s.size()) {
    // Bearer / Basic credentials.
    if (boundary(i) && (IStartsWith(s, i, "bearer ") || IStartsWith(s, i, "basic "))) {
      size_t j = i + (Lower(s[i]) == 'b' && Lower(s[i + 1]) == 'e' ? 7 : 6);
      size_t k = j;
      while (k < s.size() && TokenChar(s[k])) ++k;
      if (k >= j + 8) {  // a credential, not "bearer of news"
        out.append(s, i, j - i).append(kRedacted);
        i = k;
        continue;
      }
    }
    // Keys by prefix.
    bool done = false;
    for (const auto& p : kPrefixes) {
      if (!boundary(i) || !IStartsWith(s, i, p.text)) continue;
      size_t k = i + p.text.size();
      while (k < s.size() && KeyChar(s[k])) ++k;
      size_t n = k - i - p.text.size();
      if (n >= p.min_after && n <= p.max_after) {
        out.append(kRedacted);
        i = k;
        done = true;
        break;
      }
    }
    if (done) continue;
    // name [quote] (: or =) [space] [quote] value
    for (auto name : kNames) {
      if (!boundary(i) || !IStartsWith(s, i, name)) continue;
      size_t k = i + name.size();
      if (k < s.size() && KeyChar(s[k])) continue;  // a longer word
      while (k < s.size() && (s[k] == '"' || s[k] == '\'')) ++k;
      while (k < s.size() && s[k] == ' ') ++k;
      if (k >= s.size() || (s[k] != ':' && s[k] != '=')) continue;
      ++k;
      while (k < s.size() && (s[k] == ' ' || s[k] == '"' || s[k] == '\'')) ++k;
      size_t v = k;
      while (k < s.size() && s[k] != '"' && s[k] != '\'' && s[k] != ',' && s[k] != '&' &&
             s[k] != '}' && s[k] != '\n' && s[k] != '\r') {
        ++k;
      }
      if (k == v) continue;
      out.append(s, i, v - i).append(kRedacted);
      i = k;
      done = true;
      break;
    }
    if (done) continue;
    // scheme://user:password@host
    if (s.compare(i, 3, "://") == 0) {
      size_t k = i + 3;
      while (k < s.size() && s[k] != '@' && s[k] != '/' && s[k] != ' ' && s[k] != '"') ++k;
      if (k < s.size() && s[k] == '@' &&
          s.substr(i + 3, k - i - 3).find(':') != std::string::npos) {
        out.append("://").append(kRedacted);
        i = k;
        continue;
      }
    }
    out.push_back(s[i++]);
  }
  return out;
}

}  // namespace

std::string RedactSecrets(std::string_view text, std::span<const std::string> known_secrets) {
  std::string s(text.substr(0, kMaxRedactedBytes));
  for (const auto& secret : known_secrets) ReplaceAll(s, secret);
  std::string out = Rules(s);
  if (text.size() > kMaxRedactedBytes) {
    out += " ... [" + std::to_string(text.size() - kMaxRedactedBytes) + " more bytes]";
  }
  return out;
}

}  // namespace kinference
