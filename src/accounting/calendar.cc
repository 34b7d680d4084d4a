#include "accounting/calendar.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace kinference::accounting {
namespace {

// Days since 1970-01-01 of y-m-d (m 1..12, d 1..31).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct Civil {
  int64_t y, m, d;
};

Civil CivilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = yoe + era * 400;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp + (mp < 10 ? 3 : -9);
  return {y + (m <= 2), m, d};
}

int64_t DaysInMonth(int64_t y, int64_t m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// Reads exactly n digits at text[pos].
bool Digits(std::string_view text, size_t pos, size_t n, int64_t& out) {
  if (pos + n > text.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

}  // namespace

int64_t DayIndex(double unix_s) { return static_cast<int64_t>(std::floor(unix_s / 86400.0)); }

int64_t MonthIndex(double unix_s) {
  Civil c = CivilFromDays(DayIndex(unix_s));
  return c.y * 12 + (c.m - 1);
}

int64_t DayStart(int64_t day) { return day * 86400; }

int64_t MonthStart(int64_t month) {
  int64_t y = month >= 0 ? month / 12 : (month - 11) / 12;
  int64_t m = month - y * 12 + 1;
  return DaysFromCivil(y, m, 1) * 86400;
}

std::string FormatRfc3339(double unix_s, bool millis) {
  double whole = std::floor(unix_s);
  int64_t secs = static_cast<int64_t>(whole);
  int64_t day = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int64_t sod = secs - day * 86400;
  Civil c = CivilFromDays(day);
  std::string out = fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}", c.y, c.m, c.d,
                                sod / 3600, sod / 60 % 60, sod % 60);
  if (millis) {
    int ms = static_cast<int>(std::floor((unix_s - whole) * 1000.0));
    out += fmt::format(".{:03d}", std::min(ms, 999));
  }
  out += 'Z';
  return out;
}

std::optional<double> ParseTime(std::string_view t) {
  if (t.empty()) return std::nullopt;
  // Unix seconds.
  if (t.find('-') == std::string_view::npos) {
    int64_t v = 0;
    for (char ch : t) {
      if (ch < '0' || ch > '9' || v > 100'000'000'000LL) return std::nullopt;
      v = v * 10 + (ch - '0');
    }
    return static_cast<double>(v);
  }
  int64_t y, mo, d;
  if (!Digits(t, 0, 4, y) || t.size() < 10 || t[4] != '-' || !Digits(t, 5, 2, mo) || t[7] != '-' ||
      !Digits(t, 8, 2, d))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo)) return std::nullopt;
  double base = static_cast<double>(DaysFromCivil(y, mo, d) * 86400);
  if (t.size() == 10) return base;
  int64_t h, mi, s;
  if ((t[10] != 'T' && t[10] != 't' && t[10] != ' ') || !Digits(t, 11, 2, h) || t.size() < 19 ||
      t[13] != ':' || !Digits(t, 14, 2, mi) || t[16] != ':' || !Digits(t, 17, 2, s))
    return std::nullopt;
  if (h > 23 || mi > 59 || s > 60) return std::nullopt;
  size_t pos = 19;
  double frac = 0;
  if (pos < t.size() && t[pos] == '.') {
    double scale = 0.1;
    ++pos;
    size_t start = pos;
    while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') {
      frac += (t[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  if (pos >= t.size()) return std::nullopt;  // RFC 3339 requires an offset
  int64_t offset = 0;
  if (t[pos] == 'Z' || t[pos] == 'z') {
    ++pos;
  } else if (t[pos] == '+' || t[pos] == '-') {
    int64_t oh, om;
    if (!Digits(t, pos + 1, 2, oh) || pos + 3 >= t.size() || t[pos + 3] != ':' ||
        !Digits(t, pos + 4, 2, om) || oh > 23 || om > 59)
      return std::nullopt;
    offset = (oh * 3600 + om * 60) * (t[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != t.size()) return std::nullopt;
  return base + static_cast<double>(h * 3600 + mi * 60 + s - offset) + frac;
}

}  // namespace kinference::accounting
