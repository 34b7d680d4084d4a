// The wait an upstream error response asks for, read from its headers, validated and
// bounded, as the gateway forwards it to its own client (docs/reliability.md "Upstream
// errors"). Only numbers the gateway writes itself leave: never the upstream's bytes.
//
// What the official SDKs read (their retry loop, src/<sdk>/_base_client.py, functions
// _parse_retry_after_header, _calculate_retry_timeout and _should_retry; openai-python
// 3.60 and anthropic-sdk-python 2.16 checked): `retry-after-ms` first (a number of
// milliseconds, non-standard), then `retry-after` as a number of seconds (floats
// accepted), then as an HTTP-date; they retry 408, 409, 429 and >= 500 (and obey
// `x-should-retry: true|false`). openai-python waits a hinted 0 < delay <= 120 s and does
// not retry at all beyond 120 s (MAX_RETRY_AFTER_DELAY); anthropic-sdk-python waits any
// positive hint. Both fall back to their own backoff (0.5 s doubling, at most 8 s) without
// a hint.
//
// Accepted (RFC 9110 section 10.2.3 Retry-After = HTTP-date / delay-seconds):
//   retry-after-ms: digits with an optional fraction (a non-negative number of ms);
//   Retry-After:    digits with an optional fraction (seconds; the SDKs accept floats), or
//                   an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"; a date in the past
//                   is 0). The obsolete RFC 850 and asctime date forms are not accepted.
// Surrounding spaces and tabs are ignored; anything else (signs, exponents, other text,
// over kMaxRetryHeaderChars characters) makes that header invalid. Delays are rounded up
// and capped at kMaxRetryAfterS, the bound of the gateway's own Retry-After when no
// endpoint is healthy (GatewayContext::RetryAfterUnhealthyS).
//
// Thread-safety: pure functions (the caller passes the current time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kinference::api {

inline constexpr int64_t kMaxRetryAfterS = 3600;
inline constexpr size_t kMaxRetryHeaderChars = 64;

struct RetryDelay {
  int64_t seconds = 0;                  // Retry-After to send, 0..kMaxRetryAfterS
  std::optional<int64_t> milliseconds;  // retry-after-ms to send, when the upstream sent one
};

// The delay an upstream asked for with `retry_after` and `retry_after_ms` (header values,
// empty when absent) at `now_unix_s`; nullopt when neither header is valid. Retry-After
// sets `seconds` (else the milliseconds rounded up to seconds); a valid retry-after-ms
// sets `milliseconds`.
std::optional<RetryDelay> ParseRetryDelay(std::string_view retry_after,
                                          std::string_view retry_after_ms, int64_t now_unix_s);

// An HTTP-date in IMF-fixdate form as Unix seconds; nullopt for anything else.
std::optional<int64_t> ParseImfFixdate(std::string_view date);

// The headers that carry `d` to a client: Retry-After, and retry-after-ms when set.
std::vector<std::pair<std::string, std::string>> RetryDelayHeaders(const RetryDelay& d);

}  // namespace kinference::api
