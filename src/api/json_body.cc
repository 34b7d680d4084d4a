#include "api/json_body.h"

#include <boost/json/serialize.hpp>
#include <vector>

namespace kinference::api {

std::string SerializeWith(const boost::json::object& body,
                          std::initializer_list<FieldOverride> overrides) {
  std::vector<bool> used(overrides.size(), false);
  std::string out;
  out.push_back('{');
  auto field = [&](std::string_view key, const boost::json::value& value) {
    if (out.size() > 1) out.push_back(',');
    out += boost::json::serialize(key);
    out.push_back(':');
    out += boost::json::serialize(value);
  };
  for (const auto& kv : body) {
    const boost::json::value* value = &kv.value();
    size_t i = 0;
    for (const auto& o : overrides) {
      if (o.first == kv.key()) {
        value = &o.second;
        used[i] = true;
      }
      ++i;
    }
    field(kv.key(), *value);
  }
  size_t i = 0;
  for (const auto& o : overrides) {
    if (!used[i++]) field(o.first, o.second);
  }
  out.push_back('}');
  return out;
}

}  // namespace kinference::api
