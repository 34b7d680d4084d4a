#include "gateway/config_fields.h"

namespace kinference::gateway::config_fields {

void Fail(const std::string& field, const std::string& what) {
  throw ConfigError("gateway config: " + field + ": " + what);
}

void CheckKeys(const YAML::Node& node, const std::string& where,
               const std::set<std::string>& allowed) {
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    if (!allowed.count(key)) Fail(where.empty() ? key : where + "." + key, "unknown field");
  }
}

double Positive(const YAML::Node& node, const std::string& field) {
  double v = Scalar<double>(node, field, "a number");
  if (!(v > 0)) Fail(field, "must be > 0");
  return v;
}

double NonNegative(const YAML::Node& node, const std::string& field) {
  double v = Scalar<double>(node, field, "a number");
  if (!(v >= 0)) Fail(field, "must be >= 0");
  return v;
}

std::string NonEmptyString(const YAML::Node& node, const std::string& field) {
  if (!node) Fail(field, "missing");
  auto s = Scalar<std::string>(node, field, "a string");
  if (s.empty()) Fail(field, "must not be empty");
  return s;
}

}  // namespace kinference::gateway::config_fields
