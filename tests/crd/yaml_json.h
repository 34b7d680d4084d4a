// Test helpers: YAML documents as the JSON objects kubectl sends (plain scalars typed as
// YAML 1.2 core schema: null, true/false, integers, floats; quoted scalars stay strings),
// and a minimal structural OpenAPI v3 validator (type, properties with unknown fields
// refused, required, enum, items, minimum/maximum, minItems/maxItems, pattern) enough to
// check objects against the CRDs' schemas without an API server.
//
// Thread-safety: pure functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>
#include <regex>
#include <string>
#include <vector>

namespace kinference::testing {

inline boost::json::value YamlToJson(const YAML::Node& n) {
  namespace json = boost::json;
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json::object o;
      for (const auto& kv : n) o[kv.first.Scalar()] = YamlToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json::array a;
      for (const auto& i : n) a.push_back(YamlToJson(i));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return json::string(s);  // quoted
      if (s == "null" || s == "~") return nullptr;
      if (s == "true") return true;
      if (s == "false") return false;
      static const std::regex kInt("^-?[0-9]+$");
      static const std::regex kFloat("^-?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$");
      if (std::regex_match(s, kInt)) return static_cast<int64_t>(std::stoll(s));
      if (std::regex_match(s, kFloat)) return std::stod(s);
      return json::string(s);
    }
    default:
      return nullptr;
  }
}

// Errors "path: reason" of `v` against the OpenAPI v3 schema `schema` (YAML node).
inline void ValidateSchema(const boost::json::value& v, const YAML::Node& schema,
                           const std::string& path, std::vector<std::string>& errors) {
  std::string type = schema["type"] ? schema["type"].Scalar() : "";
  auto fail = [&](const std::string& why) { errors.push_back(path + ": " + why); };
  if (schema["enum"]) {
    bool found = false;
    for (const auto& e : schema["enum"])
      found = found || (v.is_string() && v.as_string() == e.Scalar());
    if (!found) fail("not in enum");
  }
  if (type == "object") {
    if (!v.is_object()) return fail("expected object");
    const auto& o = v.as_object();
    if (schema["properties"]) {
      for (const auto& kv : o) {
        YAML::Node sub = schema["properties"][std::string(kv.key())];
        if (!sub) {
          fail("unknown field " + std::string(kv.key()));
          continue;
        }
        ValidateSchema(kv.value(), sub, path + "." + std::string(kv.key()), errors);
      }
    } else if (schema["additionalProperties"]) {
      for (const auto& kv : o)
        ValidateSchema(kv.value(), schema["additionalProperties"],
                       path + "." + std::string(kv.key()), errors);
    }
    if (schema["required"]) {
      for (const auto& r : schema["required"])
        if (!o.contains(r.Scalar())) fail("missing required " + r.Scalar());
    }
  } else if (type == "array") {
    if (!v.is_array()) return fail("expected array");
    const auto& a = v.as_array();
    if (schema["maxItems"] && a.size() > schema["maxItems"].as<size_t>()) fail("too many items");
    if (schema["minItems"] && a.size() < schema["minItems"].as<size_t>()) fail("too few items");
    for (size_t i = 0; i < a.size(); ++i)
      ValidateSchema(a[i], schema["items"], path + "[" + std::to_string(i) + "]", errors);
  } else if (type == "string") {
    if (!v.is_string()) return fail("expected string");
    std::string s(v.as_string());
    if (schema["minLength"] && s.size() < schema["minLength"].as<size_t>()) fail("too short");
    if (schema["maxLength"] && s.size() > schema["maxLength"].as<size_t>()) fail("too long");
    if (schema["pattern"] && !std::regex_search(s, std::regex(schema["pattern"].Scalar())))
      fail("does not match pattern");
  } else if (type == "integer" || type == "number") {
    if (!v.is_number() || (type == "integer" && v.is_double())) return fail("expected " + type);
    double d = v.to_number<double>();
    if (schema["minimum"] && d < schema["minimum"].as<double>()) fail("below minimum");
    if (schema["maximum"] && d > schema["maximum"].as<double>()) fail("above maximum");
  } else if (type == "boolean") {
    if (!v.is_bool()) fail("expected boolean");
  }
}

// An object with every property of `schema` set to a valid value (the schema's `example`
// when it gives one, else: first enum value, the minimum, one array item, "a" for
// strings), for "every CRD field is known" checks.
inline boost::json::value MaximalValue(const YAML::Node& schema) {
  namespace json = boost::json;
  std::string type = schema["type"] ? schema["type"].Scalar() : "";
  if (schema["example"] && type == "string") return json::string(schema["example"].Scalar());
  if (schema["enum"]) return json::string(schema["enum"][0].Scalar());
  if (type == "object") {
    json::object o;
    if (schema["properties"])
      for (const auto& kv : schema["properties"]) o[kv.first.Scalar()] = MaximalValue(kv.second);
    return o;
  }
  if (type == "array") return json::array{MaximalValue(schema["items"])};
  if (type == "integer") return schema["minimum"] ? schema["minimum"].as<int64_t>() : int64_t{1};
  if (type == "number") return schema["minimum"] ? schema["minimum"].as<double>() : 0.5;
  if (type == "boolean") return true;
  return json::string("a");
}

}  // namespace kinference::testing
