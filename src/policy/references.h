// Reference checks: do a PolicySet's pool, provider and model names exist in the gateway
// that loads it? The loader (policy.h) cannot know; the gateway (start-up and every
// reload) and `kinference policy validate --gateway-config FILE` call this with the names
// its config defines.
//
// Errors (the set is rejected): a selector's `pools`/`providers` naming a pool or provider
// the gateway does not have (it would silently select nothing), an alternative naming a
// model no endpoint serves. Warnings only: `match.models` naming an unknown model
// (policies may be written ahead of a deployment). Each message reads
// "FILE: policy NAME: FIELD: reason".
//
// Thread-safety: pure function.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace kinference::policy {

// Names the gateway config defines.
struct KnownNames {
  std::set<std::string> pools;
  std::set<std::string> providers;
  std::set<std::string> models;  // served by some pool or provider
};

struct ReferenceReport {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};

ReferenceReport CheckReferences(const PolicySet& set, const KnownNames& known);

}  // namespace kinference::policy
