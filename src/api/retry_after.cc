#include "api/retry_after.h"

#include <algorithm>
#include <array>

namespace kinference::api {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// 1*DIGIT ["." *DIGIT] rounded up, saturated at `cap`; nullopt for anything else.
std::optional<int64_t> CeilNumber(std::string_view s, int64_t cap) {
  if (s.empty() || !IsDigit(s.front())) return std::nullopt;
  int64_t value = 0;
  size_t i = 0;
  for (; i < s.size() && IsDigit(s[i]); ++i) value = std::min(cap, value * 10 + (s[i] - '0'));
  if (i == s.size()) return value;
  if (s[i] != '.') return std::nullopt;
  bool fraction = false;
  for (++i; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return std::nullopt;
    fraction = fraction || s[i] != '0';
  }
  return std::min(cap, value + (fraction ? 1 : 0));
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::optional<int> Digits(std::string_view s) {
  int v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::optional<int64_t> ParseImfFixdate(std::string_view s) {
  // "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 section 5.6.7): fixed positions.
  static constexpr std::array<std::string_view, 7> kDays = {"Mon", "Tue", "Wed", "Thu",
                                                            "Fri", "Sat", "Sun"};
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() != 29 || s.substr(3, 2) != ", " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
      s[19] != ':' || s[22] != ':' || s.substr(25) != " GMT")
    return std::nullopt;
  if (std::find(kDays.begin(), kDays.end(), s.substr(0, 3)) == kDays.end()) return std::nullopt;
  auto month = std::find(kMonths.begin(), kMonths.end(), s.substr(8, 3));
  if (month == kMonths.end()) return std::nullopt;
  auto day = Digits(s.substr(5, 2));
  auto year = Digits(s.substr(12, 4));
  auto hour = Digits(s.substr(17, 2));
  auto minute = Digits(s.substr(20, 2));
  auto second = Digits(s.substr(23, 2));
  if (!day || !year || !hour || !minute || !second) return std::nullopt;
  if (*day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60) return std::nullopt;
  const int64_t days = DaysFromCivil(*year, (month - kMonths.begin()) + 1, *day);
  return days * 86400 + *hour * 3600 + *minute * 60 + *second;
}

std::optional<RetryDelay> ParseRetryDelay(std::string_view retry_after,
                                          std::string_view retry_after_ms, int64_t now_unix_s) {
  RetryDelay d;
  retry_after_ms = Trim(retry_after_ms);
  if (retry_after_ms.size() <= kMaxRetryHeaderChars)
    d.milliseconds = CeilNumber(retry_after_ms, kMaxRetryAfterS * 1000);
  std::optional<int64_t> seconds;
  retry_after = Trim(retry_after);
  if (retry_after.size() <= kMaxRetryHeaderChars) {
    seconds = CeilNumber(retry_after, kMaxRetryAfterS);
    if (!seconds) {
      if (auto date = ParseImfFixdate(retry_after))
        seconds = std::clamp<int64_t>(*date - now_unix_s, 0, kMaxRetryAfterS);
    }
  }
  if (!seconds && d.milliseconds) seconds = (*d.milliseconds + 999) / 1000;
  if (!seconds) return std::nullopt;
  d.seconds = *seconds;
  return d;
}

std::vector<std::pair<std::string, std::string>> RetryDelayHeaders(const RetryDelay& d) {
  std::vector<std::pair<std::string, std::string>> h = {{"Retry-After", std::to_string(d.seconds)}};
  if (d.milliseconds) h.emplace_back("retry-after-ms", std::to_string(*d.milliseconds));
  return h;
}

}  // namespace kinference::api
