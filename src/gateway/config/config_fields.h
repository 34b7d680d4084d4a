// Field readers shared by the gateway's YAML config parsers (config.cc, tenants.cc,
// provider.cc): each failure throws ConfigError naming the field path, e.g.
// "gateway config: providers[0].timeout_s: must be > 0". Start-up only (exceptions are
// allowed there, never on the request path).
//
// Thread-safety: stateless functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

#include "gateway/config/config.h"

namespace kinference::gateway::config_fields {

[[noreturn]] void Fail(const std::string& field, const std::string& what);

// The key of one map entry as text; fails (naming `where`) when the key is not a scalar
// (YAML allows a map or a list as a key: `{[a]: 1}`, `? {x: 1}`).
std::string KeyName(const YAML::Node& key, const std::string& where);

// Fails on any key of the map `node` not in `allowed`; `where` prefixes the field path.
void CheckKeys(const YAML::Node& node, const std::string& where,
               const std::set<std::string>& allowed);

// A scalar converted to T; `expected` names the type in the error ("an integer").
template <typename T>
T Scalar(const YAML::Node& node, const std::string& field, const char* expected) {
  if (!node || !node.IsScalar()) Fail(field, std::string("expected ") + expected);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    Fail(field, std::string("expected ") + expected + ", got '" + node.Scalar() + "'");
  }
}

double Positive(const YAML::Node& node, const std::string& field);     // finite, > 0
double NonNegative(const YAML::Node& node, const std::string& field);  // finite, >= 0

// Every duration in the config (seconds) is at most one week: longer is a typo, and
// 1e10 s overflows the timers' nanosecond clocks (Asio's steady_timer holds int64 ns,
// about 292 years; time_scale divides durations further).
inline constexpr double kMaxDurationS = 7 * 24 * 3600;
// A duration in seconds: > 0 (>= 0 with zero_allowed), finite, at most kMaxDurationS.
double DurationS(const YAML::Node& node, const std::string& field, bool zero_allowed = false);
// A non-empty string; "missing" when the node is absent.
std::string NonEmptyString(const YAML::Node& node, const std::string& field);

// An absolute http:// or https:// URL, parsed with Boost.URL (RFC 3986): the port
// defaults to the scheme's (80, 443); IPv6 hosts lose their brackets; `path` is as
// written (empty when absent); query and fragment are refused. Fails naming `field`.
struct HttpUrl {
  bool tls = false;
  std::string host;
  uint16_t port = 0;
  bool explicit_port = false;  // the URL names its port
  std::string path;
};
HttpUrl ParseHttpUrl(const std::string& url, const std::string& field);

}  // namespace kinference::gateway::config_fields
