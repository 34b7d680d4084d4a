#include "policy/pii.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "policy/scan_normalize.h"

namespace kinference::policy {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool BoundaryBefore(std::string_view t, size_t i) { return i == 0 || !IsAlnum(t[i - 1]); }

// A context word at most kContextChars before a number. `prefix`: the word may continue
// ("telephone" for "tel" would be listed separately; "cell" covers "cellphone").
struct ContextWord {
  std::string_view word;
  bool prefix;
};
constexpr size_t kContextChars = 32;
constexpr std::array<ContextWord, 8> kSsnWords{{{"ssn", false},
                                                {"social security", false},
                                                {"soc sec", false},
                                                {"soc. sec", false},
                                                {"ss#", false},
                                                {"ss no", false},
                                                {"ss number", false},
                                                {"ssns", false}}};
constexpr std::array<ContextWord, 9> kPhoneWords{{{"phone", true},
                                                  {"tel", false},
                                                  {"telephone", false},
                                                  {"mobile", true},
                                                  {"cell", true},
                                                  {"fax", false},
                                                  {"whatsapp", false},
                                                  {"sms", false},
                                                  {"call me", false}}};

template <size_t N>
bool ContextBefore(std::string_view t, size_t i, const std::array<ContextWord, N>& words) {
  size_t from = i > kContextChars ? i - kContextChars : 0;
  std::string window(t.substr(from, i - from));
  for (auto& c : window) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& w : words) {
    for (size_t p = window.find(w.word); p != std::string::npos; p = window.find(w.word, p + 1)) {
      size_t e = p + w.word.size();
      bool start_ok = p == 0 ? BoundaryBefore(t, from) : !IsAlpha(window[p - 1]);
      bool end_ok = w.prefix || e >= window.size() || !IsAlpha(window[e]);
      if (start_ok && end_ok) return true;
    }
  }
  return false;
}

// A run of digit groups separated by single ' ', '-' or '.', the first optionally
// preceded by '+' and any group optionally in parentheses, e.g. "+1 (555) 123-4567".
struct NumberRun {
  size_t end = 0;
  bool plus = false;
  std::vector<std::string_view> groups;
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
  bool OneSep() const {
    return seps.empty() ||
           std::all_of(seps.begin(), seps.end(), [&](char c) { return c == seps[0]; });
  }
  size_t DigitCount() const {
    size_t n = 0;
    for (const auto& g : groups) n += g.size();
    return n;
  }
  bool SizesAre(std::initializer_list<size_t> sizes) const {
    return std::equal(groups.begin(), groups.end(), sizes.begin(), sizes.end(),
                      [](std::string_view g, size_t n) { return g.size() == n; });
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
    run.groups.push_back(t.substr(g, k - g));
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
    } else if (s < t.size() && (t[s] == '(' || (paren && IsDigit(t[s])))) {
      run.seps.push_back(' ');  // "555(123)" or "(0)30": grouping without a separator
      continue;
    }
    break;
  }
  return run;
}

bool IsIpv4(const NumberRun& run) {
  if (run.plus || run.groups.size() != 4 || run.seps != "...") return false;
  for (const auto& g : run.groups) {
    if (g.size() > 3 || std::stoi(std::string(g)) > 255) return false;
  }
  return true;
}

// AAA GG SSSS / AAA.GG.SSSS (any context), or nine digits when the context says SSN.
bool IsSsnRun(std::string_view t, size_t start, const NumberRun& run) {
  if (run.plus || run.DigitCount() != 9) return false;
  bool shaped = run.SizesAre({3, 2, 4}) && run.OneSep() && run.seps[0] != '-';
  if (!shaped && !(run.groups.size() == 1 && ContextBefore(t, start, kSsnWords))) return false;
  std::string d = run.Digits();
  return IsSsn(d.substr(0, 3) + "-" + d.substr(3, 2) + "-" + d.substr(5));
}

bool IsPhone(std::string_view t, size_t start, const NumberRun& run) {
  const size_t digits = run.DigitCount();
  if (digits < 8 || !run.SepsOnly(" -.")) return false;
  // E.164 numbers have at most 15 digits (ITU-T E.164); 8 excludes short codes.
  if (run.plus) return digits <= 15;
  // North American Numbering Plan: NXX-NXX-XXXX, optionally with a leading 1.
  if (run.SizesAre({3, 3, 4}) || run.SizesAre({1, 3, 3, 4})) return true;
  // International call prefixes written instead of '+': 00 (ITU-T E.164 recommendation)
  // and 011 (North America).
  std::string_view first = run.groups.front();
  size_t prefix = first.starts_with("011") ? 3 : first.starts_with("00") ? 2 : 0;
  if (prefix && digits - prefix >= 8 && digits - prefix <= 15) return true;
  // National numbers with a trunk prefix 0 (then an area code, which never starts with 0),
  // one kind of separator.
  if (run.groups.size() >= 2 && first.size() >= 2 && first.size() <= 5 && first[0] == '0' &&
      first[1] != '0' && digits >= 9 && digits <= 12 && run.OneSep()) {
    return true;
  }
  return digits >= 10 && digits <= 15 && ContextBefore(t, start, kPhoneWords);
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
    // Runs of fewer than 8 digits are none of the kinds below (IPv4 needs 4 groups).
    if (boundary_after && (run.DigitCount() >= 8 || run.groups.size() == 4)) {
      const size_t digits = run.DigitCount();
      std::string_view raw = t.substr(run.plus ? i + 1 : i, run.end - (run.plus ? i + 1 : i));
      if (!run.plus && (IsSsn(raw) || IsSsnRun(t, i, run))) {
        kinds.insert("pii:ssn");
      } else if (IsIpv4(run)) {
        kinds.insert("pii:ip");
      } else if (!run.plus && digits >= 13 && digits <= 19 && run.SepsOnly(" -") &&
                 LuhnValid(run.Digits())) {
        kinds.insert("pii:payment_card");
      } else if (IsPhone(t, i, run)) {
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

void Scan(std::string_view text, std::set<std::string>& kinds) {
  if (NeedsScanNormalization(text)) {
    FindPii(NormalizeForScan(text), kinds);
  } else {
    FindPii(text, kinds);
  }
}

// Each pair of consecutive `values`: the end of one joined to the start of the next
// (directly and with a space), scanned.
void ScanNeighbours(std::string_view text, std::span<const TextSpan> values, std::string& window,
                    std::set<std::string>& kinds) {
  for (size_t k = 1; k < values.size(); ++k) {
    const TextSpan& a = values[k - 1];
    const TextSpan& b = values[k];
    if (a.size == 0 || b.size == 0 || a.offset + a.size > text.size() ||
        b.offset + b.size > text.size()) {
      continue;
    }
    size_t tail = std::min(a.size, kSplitWindowChars);
    std::string_view left = text.substr(a.offset + a.size - tail, tail);
    std::string_view right = text.substr(b.offset, std::min(b.size, kSplitWindowChars));
    window.assign(left).append(right);
    Scan(window, kinds);
    window.assign(left).append(" ").append(right);
    Scan(window, kinds);
  }
}

std::vector<std::string> Tags(std::set<std::string>& kinds) {
  if (kinds.empty()) return {};
  kinds.insert("pii");
  return {kinds.begin(), kinds.end()};
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

void FindPii(std::string_view text, std::set<std::string>& kinds) {
  if (HasEmail(text)) kinds.insert("pii:email");
  ScanNumbers(text, kinds);
  if (HasIban(text)) kinds.insert("pii:iban");
  if (HasIpv6(text)) kinds.insert("pii:ip");
}

std::vector<std::string> PiiTags(std::string_view text) {
  std::set<std::string> kinds;
  Scan(text, kinds);
  return Tags(kinds);
}

std::vector<std::string> PiiTags(std::string_view text, std::span<const TextSpan> values) {
  return PiiTags(text, values, {});
}

std::vector<std::string> PiiTags(std::string_view text, std::span<const TextSpan> values,
                                 std::span<const std::vector<TextSpan>> groups) {
  std::set<std::string> kinds;
  Scan(text, kinds);
  std::string window;
  ScanNeighbours(text, values, window, kinds);
  for (const auto& group : groups) ScanNeighbours(text, group, window, kinds);
  return Tags(kinds);
}

}  // namespace kinference::policy
