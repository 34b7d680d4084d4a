#include "gateway/front/tenants.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <yaml-cpp/yaml.h>

#include <boost/beast/core/string.hpp>

#include "gateway/config/config.h"
#include "gateway/config/config_fields.h"
#include "gateway/config/config_keys.h"

namespace kinference::gateway {
namespace {

using config_fields::Fail;
using config_fields::NonEmptyString;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The key of `Authorization: Bearer <key>` (scheme case-insensitive, RFC 9110 §11.1).
std::string_view BearerKey(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !boost::beast::iequals(authorization.substr(0, kScheme.size()), kScheme)) {
    return {};
  }
  std::string_view key = authorization.substr(kScheme.size());
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  return key;
}

}  // namespace

Sha256Digest Sha256(std::string_view data) {
  Sha256Digest d;
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), d.data());
  return d;
}

std::string ToHex(const Sha256Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

bool FromHex(std::string_view hex, Sha256Digest& out) {
  if (hex.size() != 64) return false;
  for (size_t i = 0; i < 32; ++i) {
    int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

TenantsConfig ParseTenantsConfig(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) Fail(where, "expected a map");
  config_fields::CheckKeys(node, where, ConfigSection("tenants"));
  TenantsConfig c;
  c.enabled = true;
  if (const auto keys = node["keys"]) {
    if (!keys.IsSequence()) Fail(where + ".keys", "expected a list of {sha256, tenant}");
    for (size_t i = 0; i < keys.size(); ++i) {
      std::string f = where + ".keys[" + std::to_string(i) + "]";
      const YAML::Node k = keys[i];
      if (!k.IsMap()) Fail(f, "expected a map with sha256, tenant");
      config_fields::CheckKeys(k, f, ConfigSection("tenants.keys[]"));
      if (!k["sha256"]) Fail(f + ".sha256", "missing");
      if (!k["tenant"]) Fail(f + ".tenant", "missing");
      TenantKey tk;
      if (!FromHex(NonEmptyString(k["sha256"], f + ".sha256"), tk.sha256))
        Fail(f + ".sha256", "expected 64 hex digits (the SHA-256 of the key, not the key)");
      tk.tenant = NonEmptyString(k["tenant"], f + ".tenant");
      c.keys.push_back(std::move(tk));
    }
  }
  if (node["anonymous_tenant"])
    c.anonymous_tenant = NonEmptyString(node["anonymous_tenant"], where + ".anonymous_tenant");
  if (const auto t = node["trust_tenant_header"]) {
    if (!t.IsScalar() || (t.Scalar() != "true" && t.Scalar() != "false"))
      Fail(where + ".trust_tenant_header", "expected true or false");
    c.trust_tenant_header = t.Scalar() == "true";
  }
  if (node["tenant_header"])
    c.tenant_header = NonEmptyString(node["tenant_header"], where + ".tenant_header");
  return c;
}

Result<std::string> Identify(const TenantsConfig& config, const http::Headers& headers,
                             ApiFront front) {
  if (!config.enabled) return std::string(kDefaultTenant);
  if (config.trust_tenant_header) {
    std::string_view t = headers.Find(config.tenant_header);
    if (!t.empty()) return std::string(t);
  }
  const std::string_view authorization = headers.Find("authorization");
  std::string_view key = BearerKey(authorization);
  const bool from_authorization = !key.empty();
  if (key.empty() && front == ApiFront::kAnthropic) key = headers.Find("x-api-key");
  if (key.empty() && !authorization.empty()) {
    // A credential in a form we do not take (Basic, no scheme, an empty bearer) is refused,
    // not read as "no key": it must not downgrade the caller to the anonymous tenant.
    return Status(ErrorCode::kUnauthenticated,
                  front == ApiFront::kAnthropic
                      ? "invalid Authorization header: expected 'Bearer <key>' (or send the "
                        "key in x-api-key)"
                      : "Invalid Authorization header: expected 'Bearer <key>'.");
  }
  if (key.empty()) {
    if (!config.anonymous_tenant.empty()) return config.anonymous_tenant;
    return Status(ErrorCode::kUnauthenticated,
                  front == ApiFront::kAnthropic
                      ? "x-api-key header is required"
                      : "You didn't provide an API key. Provide it in the Authorization header "
                        "as 'Bearer <key>'.");
  }
  const Sha256Digest digest = Sha256(key);
  // Every configured hash is compared, whatever matched, in constant time.
  const std::string* match = nullptr;
  for (const auto& k : config.keys) {
    if (CRYPTO_memcmp(k.sha256.data(), digest.data(), digest.size()) == 0 && !match)
      match = &k.tenant;
  }
  if (!match) {
    // On /v1/messages the Authorization header wins over x-api-key: name the one read.
    return Status(ErrorCode::kUnauthenticated,
                  front != ApiFront::kAnthropic ? "Incorrect API key provided."
                  : from_authorization          ? "invalid API key in the Authorization header"
                                                : "invalid x-api-key");
  }
  return *match;
}

}  // namespace kinference::gateway
