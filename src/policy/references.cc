#include "policy/references.h"

#include <fmt/format.h>

namespace kinference::policy {
namespace {

std::string Known(const std::set<std::string>& names) {
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

void CheckSelector(const Policy& p, const Selector& s, const std::string& path,
                   const KnownNames& known, std::vector<std::string>& errors) {
  for (size_t i = 0; i < s.pools.size(); ++i) {
    if (known.pools.count(s.pools[i])) continue;
    errors.push_back(fmt::format("{}: policy {}: {}.pools[{}]: unknown pool '{}' (gateway has: {})",
                                 p.source, p.name, path, i, s.pools[i], Known(known.pools)));
  }
  for (size_t i = 0; i < s.providers.size(); ++i) {
    if (known.providers.count(s.providers[i])) continue;
    errors.push_back(
        fmt::format("{}: policy {}: {}.providers[{}]: unknown provider '{}' (gateway has: {})",
                    p.source, p.name, path, i, s.providers[i], Known(known.providers)));
  }
}

}  // namespace

ReferenceReport CheckReferences(const PolicySet& set, const KnownNames& known) {
  ReferenceReport r;
  for (const auto& p : set.policies) {
    const auto& c = p.constraints;
    if (c.include) CheckSelector(p, *c.include, "spec.constraints.include", known, r.errors);
    CheckSelector(p, c.exclude, "spec.constraints.exclude", known, r.errors);
    CheckSelector(p, c.prefer, "spec.constraints.prefer", known, r.errors);
    for (size_t i = 0; i < p.alternatives.size(); ++i) {
      const std::string& m = p.alternatives[i].model;
      if (known.models.count(m)) continue;
      r.errors.push_back(fmt::format(
          "{}: policy {}: spec.alternatives[{}].model: no endpoint serves model '{}' (served: {})",
          p.source, p.name, i, m, Known(known.models)));
    }
    for (size_t i = 0; i < p.match.models.size(); ++i) {
      const std::string& m = p.match.models[i];
      if (known.models.count(m)) continue;
      r.warnings.push_back(fmt::format(
          "{}: policy {}: spec.match.models[{}]: no endpoint serves model '{}' (served: {})",
          p.source, p.name, i, m, Known(known.models)));
    }
  }
  return r;
}

}  // namespace kinference::policy
