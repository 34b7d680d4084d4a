// InferencePolicy: declarative routing policy resources and their loader.
//
// A policy is written as the Kubernetes custom resource it is meant to become:
//   apiVersion: kinference.io/v1alpha1
//   kind: InferencePolicy
//   metadata: {name: pii-local-only}
//   spec: {priority, mode, match, constraints, alternatives, onNoCandidate, onTaggerFailure,
//          onUnscannableContent, requestPriority}
// (full schema and semantics in docs/policy.md). YAML files may hold several documents.
//
// Loading is strict: unknown fields, wrong types and unknown enum values are errors. Each
// error names the file, the field path and the reason, e.g.
//   policies/pii.yaml: spec.constraints.exclude.classes[0]: unknown class 'cloud' (expected
//   local|provider)
// Loading reads files and is done at start-up or on reload, never on the request path;
// evaluation (policy/evaluate.h) is pure.
//
// Thread-safety: plain data and pure functions; a loaded PolicySet is immutable and may be
// shared between threads (see policy/store.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kinference::policy {

inline constexpr std::string_view kApiVersion = "kinference.io/v1alpha1";
inline constexpr std::string_view kKind = "InferencePolicy";

// enforce: removals and rejections apply. dry-run: computed and reported, not applied.
enum class Mode { kEnforce, kDryRun };
// local: a vLLM replica of one of our pools. provider: an external OpenAI-compatible API.
enum class EndpointClass { kLocal, kProvider };
enum class OnNoCandidate { kReject };
enum class OnTaggerFailure { kReject, kIgnore };
// What a policy with tag conditions assumes about content the taggers cannot read (images,
// audio, files; policy/request_text.h): ignore: nothing (judged on the text's tags);
// treatAsTagged: the request carries every tag the policy's match names (anyOf and allOf
// hold, noneOf fails), for fail-closed deployments.
enum class OnUnscannableContent { kIgnore, kTreatAsTagged };

const char* ToString(Mode m);
const char* ToString(EndpointClass c);

// Tag names use the taggers' alphabet [a-z0-9:._-] (others are load errors).
struct TagMatch {
  std::vector<std::string> any_of;   // at least one present (ignored when empty)
  std::vector<std::string> all_of;   // every one present
  std::vector<std::string> none_of;  // none present
  bool empty() const { return any_of.empty() && all_of.empty() && none_of.empty(); }
};

struct FeatureMatch {
  std::optional<int64_t> min_prompt_tokens;  // inclusive, estimated prompt tokens
  std::optional<int64_t> max_prompt_tokens;  // inclusive
  std::optional<bool> tools_present;         // request carries `tools`
  std::optional<bool> stream;                // request has `stream: true`
};

// Every non-empty condition must hold; an empty match matches every request.
struct Match {
  std::vector<std::string> tenants;  // any of (empty: any tenant)
  std::vector<std::string> models;   // requested model, any of (empty: any model)
  TagMatch tags;
  FeatureMatch features;
};

// Candidates selected by class, pool name (local) or provider name (provider). A
// candidate is selected when any listed item matches it.
struct Selector {
  std::vector<EndpointClass> classes;
  std::vector<std::string> pools;
  std::vector<std::string> providers;
  bool empty() const { return classes.empty() && pools.empty() && providers.empty(); }
};

// Cluster-state predicates per candidate; a candidate violating one is removed. Values a
// candidate does not expose (providers publish no vLLM /metrics) do not fail queue and
// KV predicates; a local endpoint never scraped fails maxMetricsAgeSeconds.
struct StatePredicates {
  std::optional<double> max_queue_depth;       // vllm:num_requests_waiting (requests)
  std::optional<double> max_kv_cache_usage;    // vllm:kv_cache_usage_perc, 0..1
  std::optional<double> max_predicted_ttft_s;  // router's TTFT prediction (seconds)
  std::optional<double> max_metrics_age_s;     // age of the last /metrics scrape (seconds)
  bool empty() const {
    return !max_queue_depth && !max_kv_cache_usage && !max_predicted_ttft_s && !max_metrics_age_s;
  }
};

struct Constraints {
  std::optional<Selector> include;  // when set, only selected candidates stay
  Selector exclude;                 // selected candidates are removed
  StatePredicates when;
  // Extension: after the removals above, if any candidate selected by `prefer` remains,
  // the others are removed ("use locals before providers").
  Selector prefer;
};

// A model that may serve the request instead of the requested one (see Evaluate).
struct Alternative {
  std::string model;
  double tolerance_s = 0;  // how much slower (predicted TTFT) it may be and still win
};

struct Policy {
  std::string name;      // DNS-1123 subdomain ([a-z0-9.-], <= 253, alphanumeric ends)
  std::string source;    // file it came from
  int64_t priority = 0;  // higher first; ties by name
  Mode mode = Mode::kEnforce;
  Match match;
  Constraints constraints;
  std::vector<Alternative> alternatives;
  OnNoCandidate on_no_candidate = OnNoCandidate::kReject;
  OnTaggerFailure on_tagger_failure = OnTaggerFailure::kReject;
  OnUnscannableContent on_unscannable_content = OnUnscannableContent::kIgnore;
  // Admission priority of the requests it matches (admission/admission.h: higher waits
  // less and is shed last), -1000..1000; unset: the tenant's (default 0).
  std::optional<int64_t> request_priority;
};

inline constexpr int64_t kMaxRequestPriority = 1000;

struct PolicySet {
  uint64_t generation = 0;       // increases with every successful (re)load
  std::vector<Policy> policies;  // in evaluation order: priority desc, then name
};

// Parses the YAML documents in `yaml_text`; `source` prefixes error messages. Errors:
// kInvalidArgument with one line per problem.
Result<std::vector<Policy>> ParsePolicies(std::string_view yaml_text, std::string_view source);

// Reads and parses every file, checks that names are unique, sorts into evaluation order.
// A file holding no policy (empty or comments only) is an error ("FILE: no
// InferencePolicy documents"): a half-written file must not load as "no policies".
// Errors: kInvalidArgument (one line per problem, every file checked), kNotFound when a
// file cannot be read.
Result<PolicySet> LoadPolicySet(std::span<const std::string> paths, uint64_t generation = 1);

// Sorts policies into evaluation order (priority desc, name asc).
void SortPolicies(std::vector<Policy>& policies);

}  // namespace kinference::policy
