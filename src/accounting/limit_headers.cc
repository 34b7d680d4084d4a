#include "accounting/limit_headers.h"

#include <fmt/format.h>

#include <cmath>

#include "accounting/calendar.h"
#include "accounting/money.h"

namespace kinference::accounting {
namespace {

const LimitStatus* Find(const Admission& a, LimitKind kind) {
  for (const auto& s : a.states)
    if (s.kind == kind) return &s;
  return nullptr;
}

// The more restrictive of the input and output token limits (fewer remaining).
const LimitStatus* Tokens(const Admission& a) {
  const LimitStatus* in = Find(a, LimitKind::kInputTokens);
  const LimitStatus* out = Find(a, LimitKind::kOutputTokens);
  if (!in) return out;
  if (!out) return in;
  return out->remaining < in->remaining ? out : in;
}

std::string Int(double v) { return fmt::format("{}", static_cast<int64_t>(std::floor(v))); }

void AddOpenAi(HeaderList& h, const char* what, const LimitStatus* s) {
  if (!s) return;
  h.emplace_back(fmt::format("x-ratelimit-limit-{}", what), Int(s->limit));
  h.emplace_back(fmt::format("x-ratelimit-remaining-{}", what), Int(s->remaining));
  h.emplace_back(fmt::format("x-ratelimit-reset-{}", what), FormatOpenAiDuration(s->reset_s));
}

void AddAnthropic(HeaderList& h, const char* what, const LimitStatus* s, double now) {
  if (!s) return;
  h.emplace_back(fmt::format("anthropic-ratelimit-{}-limit", what), Int(s->limit));
  h.emplace_back(fmt::format("anthropic-ratelimit-{}-remaining", what), Int(s->remaining));
  h.emplace_back(fmt::format("anthropic-ratelimit-{}-reset", what),
                 FormatRfc3339(std::ceil(now + s->reset_s)));
}

// The Unix second at which a wait of `wait_s` from `now` ends, rounded up, but not past a
// whole second that now + wait_s misses by floating-point error (a window's end).
double EndsAt(double now, double wait_s) { return std::ceil(now + wait_s - 1e-3); }

std::string Amount(LimitKind kind, double v) {
  if (IsSpend(kind)) return FormatUsd(static_cast<NanoUsd>(v)) + " USD";
  return Int(v);
}

}  // namespace

std::string FormatOpenAiDuration(double seconds) {
  int64_t ms = static_cast<int64_t>(std::llround(std::max(0.0, seconds) * 1000.0));
  if (ms < 1000) return fmt::format("{}ms", ms);
  int64_t h = ms / 3'600'000, m = ms / 60'000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
  std::string out;
  if (h > 0) out += fmt::format("{}h", h);
  if (h > 0 || m > 0) out += fmt::format("{}m", m);
  out += fmt::format("{}", s);
  if (frac != 0) {
    std::string f = fmt::format("{:03d}", frac);
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  out += "s";
  return out;
}

HeaderList OpenAiRateLimitHeaders(const Admission& a) {
  HeaderList h;
  AddOpenAi(h, "requests", Find(a, LimitKind::kRequests));
  AddOpenAi(h, "tokens", Tokens(a));
  return h;
}

HeaderList AnthropicRateLimitHeaders(const Admission& a, double now) {
  HeaderList h;
  AddAnthropic(h, "requests", Find(a, LimitKind::kRequests), now);
  AddAnthropic(h, "tokens", Tokens(a), now);
  AddAnthropic(h, "input-tokens", Find(a, LimitKind::kInputTokens), now);
  AddAnthropic(h, "output-tokens", Find(a, LimitKind::kOutputTokens), now);
  return h;
}

HeaderList RefusalHeaders(const Admission& a, double now) {
  if (a.admitted) return {};
  if (PassesSoon(a)) return {{"retry-after", Int(std::max(1.0, std::ceil(a.retry_after_s)))}};
  HeaderList h = {{"x-should-retry", "false"}};
  if (a.exceeded && IsSpend(*a.exceeded)) {
    if (const LimitStatus* s = Find(a, *a.exceeded)) {
      h.emplace_back("x-kinference-budget-limit-usd", FormatUsd(static_cast<NanoUsd>(s->limit)));
      h.emplace_back("x-kinference-budget-remaining-usd",
                     FormatUsd(static_cast<NanoUsd>(s->remaining)));
      h.emplace_back("x-kinference-budget-reset", FormatRfc3339(EndsAt(now, s->reset_s)));
    }
  }
  return h;
}

std::string RefusalMessage(const Admission& a, const std::string& tenant, const Amounts& est,
                           double now) {
  if (a.unavailable)
    return fmt::format(
        "Rate limits for tenant {} cannot be checked (the limit store is unreachable) and "
        "this tenant fails closed. Retry after {} s.",
        tenant, Int(std::max(1.0, std::ceil(a.retry_after_s))));
  if (!a.exceeded) return "";
  const LimitKind kind = *a.exceeded;
  const LimitStatus* s = Find(a, kind);
  double requested = 0;
  switch (kind) {
    case LimitKind::kSpendMonth:
    case LimitKind::kSpendDay:
      requested = static_cast<double>(est.cost);
      break;
    case LimitKind::kInputTokens:
      requested = static_cast<double>(est.input_tokens);
      break;
    case LimitKind::kOutputTokens:
      requested = static_cast<double>(est.output_tokens);
      break;
    case LimitKind::kRequests:
    case LimitKind::kConcurrent:
      requested = 1;
      break;
  }
  const char* what = kind == LimitKind::kSpendMonth ? "spend per month"
                     : kind == LimitKind::kSpendDay ? "spend per day"
                     : kind == LimitKind::kConcurrent
                         ? "concurrent requests"
                         : (kind == LimitKind::kRequests      ? "requests per minute"
                            : kind == LimitKind::kInputTokens ? "input tokens per minute"
                                                              : "output tokens per minute");
  std::string head = IsSpend(kind) ? "Budget exhausted" : "Rate limit reached";
  if (a.too_large) head = "Request too large";
  std::string msg = fmt::format("{} for tenant {}: {} (limit {}, remaining {}, requested {}).",
                                head, tenant, what, s ? Amount(kind, s->limit) : "?",
                                s ? Amount(kind, s->remaining) : "?", Amount(kind, requested));
  if (a.too_large) {
    msg += " It can never pass: set a smaller max_tokens or send a shorter prompt.";
  } else if (PassesSoon(a)) {
    msg += fmt::format(" Retry after {} s.", Int(std::max(1.0, std::ceil(a.retry_after_s))));
  } else {
    const double wait = std::ceil(a.retry_after_s);
    msg += fmt::format(" Resets at {} (in {}); retrying sooner cannot pass.",
                       FormatRfc3339(EndsAt(now, a.retry_after_s)), FormatOpenAiDuration(wait));
  }
  return msg;
}

}  // namespace kinference::accounting
