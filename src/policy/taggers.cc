#include "policy/taggers.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace kinference::policy {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool BoundaryBefore(std::string_view t, size_t i) { return i == 0 || !IsAlnum(t[i - 1]); }

bool EmailLocalChar(char c) {
  return IsAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}
bool DomainChar(char c) { return IsAlnum(c) || c == '.' || c == '-'; }

bool HasEmail(std::string_view t) {
  for (size_t at = t.find('@'); at != std::string_view::npos; at = t.find('@', at + 1)) {
    size_t l = at;
    while (l > 0 && EmailLocalChar(t[l - 1])) --l;
    size_t r = at + 1;
    while (r < t.size() && DomainChar(t[r])) ++r;
    std::string_view domain = t.substr(at + 1, r - at - 1);
    while (!domain.empty() && (domain.back() == '.' || domain.back() == '-')) {
      domain.remove_suffix(1);
    }
    if (l == at || domain.empty()) continue;
    size_t dot = domain.rfind('.');
    if (dot == std::string_view::npos || dot == 0) continue;
    std::string_view tld = domain.substr(dot + 1);
    if (tld.size() >= 2 && std::all_of(tld.begin(), tld.end(), [](char c) {
          return std::isalpha(static_cast<unsigned char>(c)) != 0;
        })) {
      return true;
    }
  }
  return false;
}

// A run of digit groups separated by single ' ', '-' or '.', the first optionally
// preceded by '+' and any group optionally in parentheses, e.g. "+1 (555) 123-4567".
struct NumberRun {
  size_t end = 0;
  bool plus = false;
  std::vector<std::string> groups;
  std::string seps;  // one separator between consecutive groups
  std::string Digits() const {
    std::string d;
    for (const auto& g : groups) d += g;
    return d;
  }
  bool SepsOnly(std::string_view allowed) const {
    return std::all_of(seps.begin(), seps.end(),
                       [&](char c) { return allowed.find(c) != std::string_view::npos; });
  }
  std::vector<size_t> Sizes() const {
    std::vector<size_t> s;
    for (const auto& g : groups) s.push_back(g.size());
    return s;
  }
};

NumberRun ScanNumber(std::string_view t, size_t i) {
  NumberRun run;
  size_t j = i;
  if (j < t.size() && t[j] == '+') {
    run.plus = true;
    ++j;
  }
  while (j < t.size()) {
    size_t g = j;
    bool paren = t[g] == '(';
    if (paren) ++g;
    size_t k = g;
    while (k < t.size() && IsDigit(t[k])) ++k;
    if (k == g || (paren && (k >= t.size() || t[k] != ')'))) break;
    run.groups.emplace_back(t.substr(g, k - g));
    j = paren ? k + 1 : k;
    run.end = j;
    // Continue over one separator (")" may be followed by a space) into the next group.
    size_t s = j;
    if (s < t.size() && (t[s] == ' ' || t[s] == '-' || t[s] == '.')) {
      char sep = t[s];
      ++s;
      if (s < t.size() && (IsDigit(t[s]) || t[s] == '(')) {
        run.seps.push_back(sep);
        j = s;
        continue;
      }
    } else if (s < t.size() && t[s] == '(') {
      run.seps.push_back(' ');
      continue;
    }
    break;
  }
  return run;
}

bool IsIpv4(const NumberRun& run) {
  if (run.plus || run.groups.size() != 4 || run.seps != "...") return false;
  for (const auto& g : run.groups) {
    if (g.size() > 3 || std::stoi(g) > 255) return false;
  }
  return true;
}

bool IsPhone(const NumberRun& run) {
  size_t digits = run.Digits().size();
  // E.164 numbers have at most 15 digits (ITU-T E.164); 8 excludes short codes.
  if (run.plus) return digits >= 8 && digits <= 15 && run.SepsOnly(" -.");
  auto sizes = run.Sizes();
  // North American Numbering Plan: NXX-NXX-XXXX, optionally with a leading 1.
  return (sizes == std::vector<size_t>{3, 3, 4} || sizes == std::vector<size_t>{1, 3, 3, 4}) &&
         run.SepsOnly(" -.");
}

void ScanNumbers(std::string_view t, std::set<std::string>& kinds) {
  size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    bool start = (IsDigit(c) || c == '+' || c == '(') && BoundaryBefore(t, i);
    if (!start) {
      ++i;
      continue;
    }
    NumberRun run = ScanNumber(t, i);
    if (run.groups.empty()) {
      ++i;
      continue;
    }
    bool boundary_after = run.end >= t.size() || !IsAlnum(t[run.end]);
    if (boundary_after) {
      std::string digits = run.Digits();
      std::string raw(t.substr(run.plus ? i + 1 : i, run.end - (run.plus ? i + 1 : i)));
      if (!run.plus && IsSsn(raw)) {
        kinds.insert("pii:ssn");
      } else if (IsIpv4(run)) {
        kinds.insert("pii:ip");
      } else if (!run.plus && digits.size() >= 13 && digits.size() <= 19 && run.SepsOnly(" -") &&
                 LuhnValid(digits)) {
        kinds.insert("pii:payment_card");
      } else if (IsPhone(run)) {
        kinds.insert("pii:phone");
      }
    }
    i = std::max(run.end, i + 1);
  }
}

bool HasIpv6(std::string_view t) {
  auto in_set = [](char c) { return IsHex(c) || c == ':' || c == '.'; };
  size_t i = 0;
  while (i < t.size()) {
    if (!in_set(t[i]) || (i > 0 && (in_set(t[i - 1]) || IsAlnum(t[i - 1])))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < t.size() && in_set(t[j])) ++j;
    std::string cand(t.substr(i, j - i));
    while (!cand.empty() && cand.back() == '.') cand.pop_back();
    if (std::count(cand.begin(), cand.end(), ':') >= 2 &&
        std::any_of(cand.begin(), cand.end(), IsHex) && (j >= t.size() || !IsAlnum(t[j]))) {
      in6_addr addr;
      if (inet_pton(AF_INET6, cand.c_str(), &addr) == 1) return true;
    }
    i = j;
  }
  return false;
}

bool HasIban(std::string_view t) {
  for (size_t i = 0; i + 4 <= t.size(); ++i) {
    if (!BoundaryBefore(t, i) || !IsUpper(t[i]) || !IsUpper(t[i + 1]) || !IsDigit(t[i + 2]) ||
        !IsDigit(t[i + 3])) {
      continue;
    }
    // Collect upper-case/digit characters, single spaces allowed between groups; remember
    // each group end as a possible end of the IBAN.
    std::string compact;
    std::vector<size_t> ends;  // compact lengths at group ends
    size_t j = i;
    while (j < t.size() && compact.size() < 34) {
      if (IsUpper(t[j]) || IsDigit(t[j])) {
        compact.push_back(t[j++]);
        continue;
      }
      if (t[j] == ' ' && j + 1 < t.size() && (IsUpper(t[j + 1]) || IsDigit(t[j + 1]))) {
        ends.push_back(compact.size());
        ++j;
        continue;
      }
      break;
    }
    if (j >= t.size() || !IsAlnum(t[j])) ends.push_back(compact.size());
    for (auto it = ends.rbegin(); it != ends.rend(); ++it) {
      if (*it >= 15 && IbanValid(std::string_view(compact).substr(0, *it))) return true;
    }
  }
  return false;
}

}  // namespace

bool LuhnValid(std::string_view digits) {
  if (digits.empty()) return false;
  int sum = 0;
  bool dbl = false;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (!IsDigit(*it)) return false;
    int d = *it - '0';
    if (dbl) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    dbl = !dbl;
  }
  return sum % 10 == 0;
}

bool IbanValid(std::string_view s) {
  // ISO 13616: 2-letter country code, 2 check digits, up to 30 alphanumerics; 15 is the
  // shortest national format (Norway). Valid when the rearranged number mod 97 == 1.
  if (s.size() < 15 || s.size() > 34 || !IsUpper(s[0]) || !IsUpper(s[1]) || !IsDigit(s[2]) ||
      !IsDigit(s[3])) {
    return false;
  }
  int mod = 0;
  auto feed = [&](char c) {
    if (IsDigit(c)) {
      mod = (mod * 10 + (c - '0')) % 97;
    } else if (IsUpper(c)) {
      mod = (mod * 100 + (c - 'A' + 10)) % 97;
    } else {
      mod = -1000000;
    }
  };
  for (size_t k = 4; k < s.size(); ++k) feed(s[k]);
  for (size_t k = 0; k < 4; ++k) feed(s[k]);
  return mod == 1;
}

bool IsSsn(std::string_view s) {
  if (s.size() != 11 || s[3] != '-' || s[6] != '-') return false;
  for (size_t k : {0, 1, 2, 4, 5, 7, 8, 9, 10}) {
    if (!IsDigit(s[k])) return false;
  }
  int area = std::stoi(std::string(s.substr(0, 3)));
  int group = std::stoi(std::string(s.substr(4, 2)));
  int serial = std::stoi(std::string(s.substr(7, 4)));
  return area != 0 && area != 666 && area < 900 && group != 0 && serial != 0;
}

std::vector<std::string> PiiTags(std::string_view text) {
  std::set<std::string> kinds;
  if (HasEmail(text)) kinds.insert("pii:email");
  ScanNumbers(text, kinds);
  if (HasIban(text)) kinds.insert("pii:iban");
  if (HasIpv6(text)) kinds.insert("pii:ip");
  if (kinds.empty()) return {};
  kinds.insert("pii");
  return {kinds.begin(), kinds.end()};
}

std::vector<std::string> ParseTagHeader(std::string_view value) {
  std::set<std::string> out;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    std::string item(value.substr(pos, comma - pos));
    auto not_space = [](char c) { return !std::isspace(static_cast<unsigned char>(c)); };
    item.erase(item.begin(), std::find_if(item.begin(), item.end(), not_space));
    item.erase(std::find_if(item.rbegin(), item.rend(), not_space).base(), item.end());
    for (auto& c : item) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool ok = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) {
      return IsAlnum(c) || c == ':' || c == '.' || c == '_' || c == '-';
    });
    if (ok) out.insert(item);
    pos = comma + 1;
  }
  return {out.begin(), out.end()};
}

int64_t EstimateTokens(std::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

std::vector<std::string> RunTaggers(const TaggerConfig& config, const TaggerInput& input) {
  std::set<std::string> tags;
  if (config.pii) {
    for (auto& t : PiiTags(input.text)) tags.insert(t);
  }
  if (config.simple) {
    int64_t tokens = input.prompt_tokens >= 0 ? input.prompt_tokens : EstimateTokens(input.text);
    if (tokens <= config.simple_max_prompt_tokens && !input.tools_present) tags.insert("simple");
  }
  if (config.trust_tag_header && !input.tag_header.empty()) {
    for (auto& t : ParseTagHeader(input.tag_header)) tags.insert(t);
  }
  return {tags.begin(), tags.end()};
}

}  // namespace kinference::policy
