// Money: exact amounts as integers. A cost is int64 nano-USD (1e-9 USD), so sums over any
// number of requests are exact (int64 holds 9.2e9 USD); a price is int64 nano-USD per
// million tokens, so prices with up to 9 decimal places ("0.0375" USD per million
// tokens) are held exactly. Parsing and formatting go through decimal text, never
// through a binary floating-point value.
//
// Errors: Parse* return kInvalidArgument naming what was wrong.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kinference::accounting {

// 1e-9 USD.
using NanoUsd = int64_t;
inline constexpr NanoUsd kNanosPerUsd = 1'000'000'000;

// A non-negative decimal number of USD ("3", "0.075", "12.5") with at most 9 fractional
// digits, as nano-USD. No sign, exponent, or leading '.'; at most 1e9 USD.
Result<NanoUsd> ParseUsd(std::string_view text);

// Exact decimal text of `nanos` USD with the trailing zeros of the fraction removed
// ("0.000123", "12", "-0.5").
std::string FormatUsd(NanoUsd nanos);

// `nanos` as a double (for JSON number fields next to the exact integer).
inline double ToUsd(NanoUsd nanos) { return static_cast<double>(nanos) / kNanosPerUsd; }

}  // namespace kinference::accounting
