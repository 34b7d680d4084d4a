#include "gateway/config/config_fields.h"

#include <boost/url/parse.hpp>
#include <charconv>
#include <cmath>

namespace kinference::gateway::config_fields {

void Fail(const std::string& field, const std::string& what) {
  throw ConfigError("gateway config: " + field + ": " + what);
}

std::string KeyName(const YAML::Node& key, const std::string& where) {
  if (!key.IsScalar()) Fail(where.empty() ? "(top level)" : where, "keys must be plain strings");
  return key.Scalar();
}

void CheckKeys(const YAML::Node& node, const std::string& where,
               const std::set<std::string>& allowed) {
  for (const auto& kv : node) {
    std::string key = KeyName(kv.first, where);
    if (!allowed.count(key)) Fail(where.empty() ? key : where + "." + key, "unknown field");
  }
}

double Positive(const YAML::Node& node, const std::string& field) {
  double v = Scalar<double>(node, field, "a number");
  if (!(v > 0)) Fail(field, "must be > 0");
  if (!std::isfinite(v)) Fail(field, "must be finite");
  return v;
}

double NonNegative(const YAML::Node& node, const std::string& field) {
  double v = Scalar<double>(node, field, "a number");
  if (!(v >= 0)) Fail(field, "must be >= 0");
  if (!std::isfinite(v)) Fail(field, "must be finite");
  return v;
}

double DurationS(const YAML::Node& node, const std::string& field, bool zero_allowed) {
  double v = zero_allowed ? NonNegative(node, field) : Positive(node, field);
  if (v > kMaxDurationS) Fail(field, "must be at most 604800 s (one week)");
  return v;
}

std::string NonEmptyString(const YAML::Node& node, const std::string& field) {
  if (!node) Fail(field, "missing");
  auto s = Scalar<std::string>(node, field, "a string");
  if (s.empty()) Fail(field, "must not be empty");
  return s;
}

HttpUrl ParseHttpUrl(const std::string& url, const std::string& field) {
  auto u = boost::urls::parse_uri(url);
  if (!u || (u->scheme() != "http" && u->scheme() != "https") || !u->has_authority())
    Fail(field, "expected http(s)://host[:port][/path], got '" + url + "'");
  if (u->has_query() || u->has_fragment() || u->has_userinfo())
    Fail(field, "no user info, query or fragment allowed in '" + url + "'");
  HttpUrl out;
  out.tls = u->scheme() == "https";
  out.port = out.tls ? 443 : 80;
  if (u->has_port()) {
    std::string_view text = u->port();
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec != std::errc() || ptr != text.data() + text.size() || port == 0 || port > 65535)
      Fail(field, "bad port in '" + url + "'");
    out.port = static_cast<uint16_t>(port);
    out.explicit_port = true;
  }
  std::string_view host = u->encoded_host_address();
  if (host.starts_with("[") && host.ends_with("]")) host = host.substr(1, host.size() - 2);
  if (host.empty()) Fail(field, "no host in '" + url + "'");
  out.host = std::string(host);
  out.path = std::string(u->encoded_path());
  return out;
}

}  // namespace kinference::gateway::config_fields
