// UTC calendar arithmetic for budgets (spend per day and per month reset at UTC midnight
// and on the first of the month, 00:00 UTC) and RFC 3339 timestamps (Anthropic's
// anthropic-ratelimit-*-reset headers, /v1/usage from/to and its hour/day buckets).
// Civil-date conversion after Howard Hinnant's public-domain days_from_civil /
// civil_from_days algorithms (proleptic Gregorian calendar).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kinference::accounting {

// Days since 1970-01-01 (UTC) of Unix time `unix_s` (floor).
int64_t DayIndex(double unix_s);
// year * 12 + (month - 1) of Unix time `unix_s` (UTC).
int64_t MonthIndex(double unix_s);
// Unix time of the first second of day `day` / month `month` (indices as above).
int64_t DayStart(int64_t day);
int64_t MonthStart(int64_t month);

// "2025-01-31T23:59:59Z" (whole seconds, floor) or, with millis, "...59.123Z".
std::string FormatRfc3339(double unix_s, bool millis = false);
// RFC 3339 date-time ("2025-01-31T23:59:59Z", "...59.5+02:00", lowercase t/z allowed), a
// date ("2025-01-31", midnight UTC), or Unix seconds ("1738367999"); nullopt otherwise.
std::optional<double> ParseTime(std::string_view text);

}  // namespace kinference::accounting
