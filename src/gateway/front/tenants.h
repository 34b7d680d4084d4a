// Tenants: who sent a request. A tenant is named by the gateway config and identified
// by an API key (OpenAI's `Authorization: Bearer <key>`; on /v1/messages also
// Anthropic's `x-api-key: <key>`) or, where the operator trusts an auth proxy in front,
// by a header that proxy sets. The tenant label flows into the token-accounting
// counters (stats/stats.h) and into the request path (ParsedRequest::tenant) for policies.
//
// Config (section `tenants`, optional; without it every request is tenant "default"):
//   tenants:
//     keys:                              # SHA-256 of the API key, lowercase hex
//       - {sha256: "9f86d0...", tenant: acme}
//     anonymous_tenant: free             # optional: requests with no key run as "free"
//     trust_tenant_header: false         # true: honour the header below
//     tenant_header: x-kinference-tenant # set by a trusted auth proxy
// Keys are never stored in plaintext: `echo -n "$KEY" | sha256sum` gives the hash. A
// presented key is hashed and compared against every configured hash in constant time
// (CRYPTO_memcmp), so timing reveals neither which hash matched nor how much of it.
// A request presenting a key that matches no hash is refused even when anonymous
// traffic is allowed (a mistyped key should not silently downgrade to anonymous); so is
// an Authorization header that is not `Bearer <key>` (Basic, no scheme, an empty bearer),
// unless, on /v1/messages, x-api-key carries the key.
//
// Errors: Identify returns kUnauthenticated (HTTP 401; the fronts answer in their own
// API's error shape). Config parsing throws ConfigError naming the field.
//
// Thread-safety: TenantsConfig is plain data; Identify is a pure function.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "http/server.h"

namespace YAML {
class Node;
}

namespace kinference::gateway {

// The tenant of every request when the config has no `tenants` section.
inline constexpr const char* kDefaultTenant = "default";
inline constexpr const char* kDefaultTenantHeader = "x-kinference-tenant";

using Sha256Digest = std::array<unsigned char, 32>;

struct TenantKey {
  Sha256Digest sha256{};
  std::string tenant;
};

struct TenantsConfig {
  bool enabled = false;  // a `tenants` section was given
  std::vector<TenantKey> keys;
  std::string anonymous_tenant;  // empty: requests without a key get 401
  bool trust_tenant_header = false;
  std::string tenant_header = kDefaultTenantHeader;
};

// Parses the `tenants` section (`where` prefixes error messages). Throws ConfigError.
TenantsConfig ParseTenantsConfig(const YAML::Node& node, const std::string& where);

// SHA-256 of `data` (OpenSSL).
Sha256Digest Sha256(std::string_view data);
// Lowercase hex of a digest, and back (false when `hex` is not 64 hex digits).
std::string ToHex(const Sha256Digest& digest);
bool FromHex(std::string_view hex, Sha256Digest& out);

enum class ApiFront { kOpenAi, kAnthropic };

// The tenant of a request with `headers` arriving on `front`; see the header comment.
Result<std::string> Identify(const TenantsConfig& config, const http::Headers& headers,
                             ApiFront front);

}  // namespace kinference::gateway
