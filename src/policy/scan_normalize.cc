#include "policy/scan_normalize.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/uspoof.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kinference::policy {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool ValidScalar(uint32_t cp) { return cp > 0 && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF); }

// Named character references (WHATWG HTML) for the characters PII is written with, and the
// invisible ones used to break it up; others stay as written.
struct NamedRef {
  std::string_view name;
  uint32_t cp;
};
constexpr std::array<NamedRef, 36> kNamedRefs{{
    {"amp", '&'},      {"lt", '<'},        {"gt", '>'},        {"quot", '"'},     {"apos", '\''},
    {"nbsp", 0xA0},    {"commat", '@'},    {"period", '.'},    {"num", '#'},      {"plus", '+'},
    {"minus", 0x2212}, {"hyphen", 0x2010}, {"dash", 0x2010},   {"ndash", 0x2013}, {"mdash", 0x2014},
    {"lpar", '('},     {"rpar", ')'},      {"lsqb", '['},      {"rsqb", ']'},     {"lbrack", '['},
    {"rbrack", ']'},   {"lcub", '{'},      {"rcub", '}'},      {"colon", ':'},    {"sol", '/'},
    {"bsol", '\\'},    {"percnt", '%'},    {"comma", ','},     {"lowbar", '_'},   {"shy", 0xAD},
    {"zwj", 0x200D},   {"zwnj", 0x200C},   {"thinsp", 0x2009}, {"ensp", 0x2002},  {"emsp", 0x2003},
    {"NewLine", '\n'},
}};

// `&...` at in[i]: the decoded code point and the reference's length, or {0, 0}.
std::pair<uint32_t, size_t> HtmlReference(std::string_view in, size_t i) {
  size_t j = i + 1;
  if (j < in.size() && in[j] == '#') {
    ++j;
    bool hex = j < in.size() && (in[j] == 'x' || in[j] == 'X');
    if (hex) ++j;
    uint32_t cp = 0;
    size_t start = j;
    while (j < in.size() && j - start < 7) {
      int v = hex ? HexValue(in[j]) : (in[j] >= '0' && in[j] <= '9' ? in[j] - '0' : -1);
      if (v < 0) break;
      cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
      ++j;
    }
    if (j == start || !ValidScalar(cp)) return {0, 0};
    if (j < in.size() && in[j] == ';') ++j;
    return {cp, j - i};
  }
  size_t start = j;
  while (j < in.size() && j - start < 8 && std::isalpha(static_cast<unsigned char>(in[j]))) ++j;
  if (j == start || j >= in.size() || in[j] != ';') return {0, 0};
  std::string_view name = in.substr(start, j - start);
  for (const auto& ref : kNamedRefs) {
    if (ref.name == name) return {ref.cp, j + 1 - i};
  }
  return {0, 0};
}

// `\uXXXX` (and a following low surrogate's `\uXXXX`) at in[i]: code point and length.
std::pair<uint32_t, size_t> UnicodeEscape(std::string_view in, size_t i) {
  auto unit = [&](size_t k) -> int32_t {
    if (k + 6 > in.size() || in[k] != '\\' || in[k + 1] != 'u') return -1;
    int32_t v = 0;
    for (size_t d = k + 2; d < k + 6; ++d) {
      int h = HexValue(in[d]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  };
  int32_t hi = unit(i);
  if (hi < 0) return {0, 0};
  if (hi >= 0xD800 && hi <= 0xDBFF) {
    int32_t lo = unit(i + 6);
    if (lo < 0xDC00 || lo > 0xDFFF) return {0, 0};
    return {0x10000 + ((static_cast<uint32_t>(hi) - 0xD800) << 10) +
                (static_cast<uint32_t>(lo) - 0xDC00),
            12};
  }
  if (!ValidScalar(static_cast<uint32_t>(hi))) return {0, 0};
  return {static_cast<uint32_t>(hi), 6};
}

// Step 1: one pass over percent-encoding, HTML references and \u escapes.
bool DecodeEscapes(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  bool changed = false;
  for (size_t i = 0; i < in.size();) {
    char c = in[i];
    if (c == '%' && i + 2 < in.size()) {
      int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi >= 0 && lo >= 0 && (hi || lo)) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 3;
        changed = true;
        continue;
      }
    } else if (c == '&') {
      auto [cp, len] = HtmlReference(in, i);
      if (len) {
        AppendUtf8(out, cp);
        i += len;
        changed = true;
        continue;
      }
    } else if (c == '\\') {
      auto [cp, len] = UnicodeEscape(in, i);
      if (len) {
        AppendUtf8(out, cp);
        i += len;
        changed = true;
        continue;
      }
    }
    out.push_back(c);
    ++i;
  }
  return changed;
}

bool HasNonAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return true;
  }
  return false;
}

// The ASCII look-alike of a non-ASCII code point: its UTS #39 confusable skeleton (ICU's
// uspoof_getSkeleton; Unicode's confusables.txt) with combining marks dropped, when that
// is printable ASCII ("а" CYRILLIC SMALL A -> "a", "З" CYRILLIC CAPITAL ZE -> "3", "é" ->
// "e"); empty otherwise (the character has no ASCII look-alike and is kept). Cached per
// thread: a text repeats few distinct code points.
std::string AsciiSkeleton(UChar32 c) {
  static USpoofChecker* const checker = [] {
    UErrorCode ec = U_ZERO_ERROR;
    USpoofChecker* sc = uspoof_open(&ec);
    return U_SUCCESS(ec) ? sc : nullptr;
  }();
  // 4096 entries: more than the letters of the scripts a request mixes; past that, no cache.
  constexpr size_t kMaxCached = 4096;
  thread_local std::unordered_map<UChar32, std::string> cache;
  if (auto it = cache.find(c); it != cache.end()) return it->second;
  std::string ascii;
  if (checker) {
    UChar in[2];
    int32_t n = 0;
    U16_APPEND_UNSAFE(in, n, c);
    UChar buf[32];
    UErrorCode ec = U_ZERO_ERROR;
    const int32_t len = uspoof_getSkeleton(checker, 0, in, n, buf, 32, &ec);
    for (int32_t i = 0; U_SUCCESS(ec) && i < len; ++i) {
      if (u_charType(buf[i]) == U_NON_SPACING_MARK) continue;
      if (buf[i] < 0x21 || buf[i] > 0x7E) {
        ascii.clear();
        break;
      }
      ascii.push_back(static_cast<char>(buf[i]));
    }
  }
  if (cache.size() < kMaxCached) cache.emplace(c, ascii);
  return ascii;
}

// A look-alike written as the skeleton of a digit ("O" for 0, "l" for 1: Cyrillic О,
// Greek Ο, Cyrillic І...) is a digit when the nearest character around it that is neither
// a separator (' ', '-', '.') nor another such look-alike is an ASCII digit, looking left
// first and then right, at most kDigitContext characters away; else it stays a letter.
constexpr size_t kDigitContext = 24;
void ResolveDigitLookAlikes(std::string& out, const std::vector<size_t>& at) {
  auto ambiguous = [&](size_t q) { return std::binary_search(at.begin(), at.end(), q); };
  auto skip = [&](size_t q) {
    char ch = out[q];
    return ch == ' ' || ch == '-' || ch == '.' || ambiguous(q);
  };
  std::vector<size_t> digits;
  for (size_t p : at) {
    std::optional<bool> digit;
    for (size_t q = p, steps = 0; q > 0 && steps < kDigitContext && !digit; ++steps) {
      if (!skip(--q)) digit = out[q] >= '0' && out[q] <= '9';
    }
    for (size_t q = p + 1, steps = 0; q < out.size() && steps < kDigitContext && !digit;
         ++q, ++steps) {
      if (!skip(q)) digit = out[q] >= '0' && out[q] <= '9';
    }
    if (digit.value_or(false)) digits.push_back(p);
  }
  for (size_t p : digits) out[p] = out[p] == 'O' ? '0' : '1';
}

// Step 2: NFKC (on the UTF-8 directly: ICU's quick check passes ASCII and already
// normalised text through cheaply), then the per-code-point mapping of the header.
bool NormalizeUnicode(std::string_view in, std::string& out) {
  UErrorCode ec = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(ec);
  std::string normal;
  if (U_SUCCESS(ec)) {
    icu::StringByteSink<std::string> sink(&normal, static_cast<int32_t>(in.size()));
    nfkc->normalizeUTF8(0, icu::StringPiece(in.data(), static_cast<int32_t>(in.size())), sink,
                        nullptr, ec);
  }
  if (U_FAILURE(ec)) normal.assign(in);
  out.clear();
  out.reserve(normal.size());
  std::vector<size_t> digit_look_alikes;  // positions in `out`, ascending
  const auto* p = reinterpret_cast<const uint8_t*>(normal.data());
  const int32_t n = static_cast<int32_t>(normal.size());
  for (int32_t i = 0; i < n;) {
    if (p[i] < 0x80) {
      out.push_back(static_cast<char>(p[i++]));
      continue;
    }
    UChar32 c;
    U8_NEXT(p, i, n, c);
    if (c < 0) {  // ill-formed: U+FFFD, as ICU's conversions do
      AppendUtf8(out, 0xFFFD);
      continue;
    }
    if (u_hasBinaryProperty(c, UCHAR_DEFAULT_IGNORABLE_CODE_POINT)) continue;
    switch (u_charType(c)) {
      case U_FORMAT_CHAR:
      case U_NON_SPACING_MARK:
      case U_ENCLOSING_MARK:
        continue;
      case U_DECIMAL_DIGIT_NUMBER:
        out.push_back(static_cast<char>('0' + u_charDigitValue(c)));
        continue;
      case U_SPACE_SEPARATOR:
      case U_LINE_SEPARATOR:
      case U_PARAGRAPH_SEPARATOR:
        out.push_back(' ');
        continue;
      case U_DASH_PUNCTUATION:
        out.push_back('-');
        continue;
      default:
        break;
    }
    if (c == 0x2212) {
      out.push_back('-');
    } else if (c == 0x3002) {
      out.push_back('.');
    } else if (std::string ascii = AsciiSkeleton(c); !ascii.empty()) {
      if (ascii == "O" || ascii == "l") digit_look_alikes.push_back(out.size());
      out += ascii;
    } else {
      AppendUtf8(out, static_cast<uint32_t>(c));
    }
  }
  if (!digit_look_alikes.empty()) ResolveDigitLookAlikes(out, digit_look_alikes);
  return out != in;
}

}  // namespace

bool NeedsScanNormalization(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80 || c == '%' || c == '&' || c == '\\') return true;
  }
  return false;
}

std::string NormalizeForScan(std::string_view text) {
  std::string cur(text), next;
  auto has_escape = [](std::string_view s) {
    return s.find_first_of("%&\\") != std::string_view::npos;
  };
  for (int round = 0; round < kMaxScanNormalizeRounds; ++round) {
    bool decoded = has_escape(cur) && DecodeEscapes(cur, next);
    if (decoded) cur.swap(next);
    bool mapped = HasNonAscii(cur) && NormalizeUnicode(cur, next);
    if (mapped) cur.swap(next);
    // The Unicode step is idempotent: another round only helps when this one decoded
    // something (which may be another layer) or made new escapes (`％４０` -> `%40`).
    if (!decoded && !(mapped && has_escape(cur))) break;
  }
  return cur;
}

}  // namespace kinference::policy
