// Helpers for policy tests: compact candidate and policy construction, policy files.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "policy/evaluate.h"

namespace kinference::policy::testing {

inline Candidate Local(std::string endpoint, std::string model, std::string pool, double queue,
                       double ttft, double age = 1.0, double kv = 0.1) {
  Candidate c;
  c.endpoint = std::move(endpoint);
  c.model = std::move(model);
  c.cls = EndpointClass::kLocal;
  c.pool = std::move(pool);
  c.queue_depth = queue;
  c.kv_cache_usage = kv;
  c.metrics_age_s = age;
  c.predicted_ttft_s = ttft;
  return c;
}

inline Candidate Provider(std::string endpoint, std::string model, std::string provider,
                          double ttft) {
  Candidate c;
  c.endpoint = std::move(endpoint);
  c.model = std::move(model);
  c.cls = EndpointClass::kProvider;
  c.provider = std::move(provider);
  c.predicted_ttft_s = ttft;
  return c;
}

inline PolicySet SetOf(std::vector<Policy> policies, uint64_t generation = 3) {
  SortPolicies(policies);
  return PolicySet{generation, std::move(policies)};
}

inline std::vector<std::string> Endpoints(const std::vector<Candidate>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(c.endpoint);
  return out;
}

// One InferencePolicy document named `name` with `spec` (YAML flow).
inline std::string PolicyDoc(const std::string& name, const std::string& spec = "{}") {
  return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: " + name +
         "}\nspec: " + spec + "\n";
}

// Writes `text` to a file in the temp directory unique to this process; returns its path.
inline std::string TempPolicyFile(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() /
           ("policy_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace kinference::policy::testing
