// Secret redaction for logs: what an upstream echoed in an error body (its API key, a
// bearer token, a password in a URL) must not reach the log in clear, let alone a client.
//
// RedactSecrets replaces, in this order:
//  - every occurrence of a known secret (the gateway's provider keys, 8 characters or more);
//  - `Bearer <token>` and `Basic <token>` credentials of 8 characters or more (RFC 6750,
//    RFC 7617);
//  - API keys by their published prefixes: OpenAI `sk-...` (also `sk-proj-`), Anthropic
//    `sk-ant-...`, AWS access key ids `AKIA` + 16 (AWS IAM "Understanding unique ID
//    prefixes"), Google API keys `AIza` + 35; 20 or more key characters after the prefix
//    (AWS: exactly 16);
//  - the value after a secret-looking name: `api_key`, `api-key`, `apikey`, `x-api-key`,
//    `authorization`, `password`, `passwd`, `secret`, `token`, `access_token` followed by
//    `:` or `=` (optionally quoted, as in JSON or a query string);
//  - user information in URLs (`scheme://user:password@host` -> `scheme://[REDACTED]@host`);
// each with kRedacted. Input is cut to kMaxRedactedBytes first (the rest is dropped and
// counted in a trailing note), so a huge body costs bounded time and log space.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace kinference {

inline constexpr std::string_view kRedacted = "[REDACTED]";
inline constexpr size_t kMaxRedactedBytes = 4096;

std::string RedactSecrets(std::string_view text, std::span<const std::string> known_secrets = {});

}  // namespace kinference
