#include "accounting/money.h"

#include <cstdlib>

namespace kinference::accounting {

Result<NanoUsd> ParseUsd(std::string_view text) {
  auto bad = [&](const char* why) {
    return InvalidArgument(
        "expected a non-negative decimal amount of USD with at most 9 "
        "decimal places, got '" +
        std::string(text) + "' (" + why + ")");
  };
  if (text.empty()) return bad("empty");
  size_t i = 0;
  int64_t whole = 0;
  size_t whole_digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (++whole_digits > 10) return bad("too large");
    whole = whole * 10 + (text[i] - '0');
    ++i;
  }
  if (whole_digits == 0) return bad("no leading digit");
  int64_t frac = 0;
  int frac_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (++frac_digits > 9) return bad("more than 9 decimal places");
      frac = frac * 10 + (text[i] - '0');
      ++i;
    }
    if (frac_digits == 0) return bad("no digit after '.'");
  }
  if (i != text.size()) return bad("unexpected character");
  for (int d = frac_digits; d < 9; ++d) frac *= 10;
  if (whole > 1'000'000'000) return bad("too large");
  return whole * kNanosPerUsd + frac;
}

std::string FormatUsd(NanoUsd nanos) {
  std::string out;
  uint64_t mag;
  if (nanos < 0) {
    out += '-';
    mag = static_cast<uint64_t>(-(nanos + 1)) + 1;
  } else {
    mag = static_cast<uint64_t>(nanos);
  }
  out += std::to_string(mag / kNanosPerUsd);
  uint64_t frac = mag % kNanosPerUsd;
  if (frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 9 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    out += '.';
    out += digits;
  }
  return out;
}

}  // namespace kinference::accounting
