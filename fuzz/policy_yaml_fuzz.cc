// InferencePolicy YAML (policy loader): any bytes either load or give a kInvalidArgument
// error naming a field; a loaded policy evaluates against a candidate without failing
// other than by a policy rejection.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/evaluate.h"
#include "policy/policy.h"

using namespace kinference::policy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto policies = ParsePolicies(text, "fuzz.yaml");
  if (!policies.ok()) {
    if (policies.status().code() != kinference::ErrorCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  PolicySet set{1, *policies};
  SortPolicies(set.policies);
  Candidate local;
  local.endpoint = "a/0";
  local.model = "m";
  local.pool = "a";
  Candidate provider;
  provider.endpoint = "openai/m";
  provider.model = "m";
  provider.cls = EndpointClass::kProvider;
  provider.provider = "openai";
  RequestInfo req{.tenant = "acme", .model = "m", .tags = {"pii"}, .unscannable = {"image"}};
  std::vector<Candidate> candidates{local, provider};
  auto ev = Evaluate(set, req, candidates);
  if (!ev.ok() && ev.status().code() != kinference::ErrorCode::kPermissionDenied &&
      ev.status().code() != kinference::ErrorCode::kUnavailable) {
    __builtin_trap();
  }
  return 0;
}
