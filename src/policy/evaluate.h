// Policy evaluation: which policies match a request, which candidate endpoints they leave,
// which alternative model serves it, or why it is rejected. Pure: no I/O, no clock (the
// state it judges, e.g. metrics age, is passed in already computed).
//
// Rules (docs/policy.md has the full text):
//  - Policies are visited in evaluation order (priority desc, then name). Every matching
//    policy applies; enforce policies narrow the candidate set in turn, dry-run policies
//    are computed against the set as it stands at their turn and only reported.
//  - Per policy: include (if set) keeps selected candidates, exclude removes selected ones,
//    `when` predicates remove violators, then `prefer` drops the non-preferred candidates
//    if any preferred one remains.
//  - Candidates considered are those of the requested model plus the models named by
//    matching enforce policies' alternatives; candidates of other models are ignored.
//  - Model choice: with R = best (lowest) predicted TTFT among remaining candidates of the
//    requested model (infinity if none) and A = best for an alternative, the alternative
//    wins when A < R (strictly faster) or, with toleranceSeconds T > 0 (the policy author
//    declaring the alternative cheaper), when A <= R + T. Among winners the lowest A wins,
//    ties by listing order. Otherwise the requested model stays.
//  - When candidates existed but none remains, the request is rejected (onNoCandidate:
//    reject): kPermissionDenied naming the enforce policy that removed the last one.
//  - A matching policy with tag conditions and onTaggerFailure: reject rejects the request
//    (kUnavailable, naming the policy and tagger) when a tagger failed; with ignore the
//    policy is judged on the tags that were produced.
//  - A policy with tag conditions and onUnscannableContent: treatAsTagged, given a request
//    with unscannable content, treats the request as carrying every tag its match names.
//  - No policy matching means no constraints: every candidate of the requested model stays.
//
// Thread-safety: pure function over immutable inputs; safe from any thread.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "policy/policy.h"

namespace kinference::policy {

struct RequestInfo {
  std::string tenant;                       // empty when unauthenticated
  std::string model;                        // requested model (OpenAI `model`)
  std::vector<std::string> tags;            // from the taggers (policy/taggers.h)
  std::vector<std::string> failed_taggers;  // taggers that failed or timed out
  // Kinds of content no tagger could read ("audio", "file", "image"; policy/request_text.h);
  // policies with onUnscannableContent: treatAsTagged judge their tag conditions as held.
  std::vector<std::string> unscannable;
  int64_t prompt_tokens = 0;  // estimated prompt tokens
  bool tools_present = false;
  bool stream = false;
};

// One endpoint that could serve the request, with its current state as the gateway sees
// it (from routing::CandidateScore and the last scrape).
struct Candidate {
  std::string endpoint;  // e.g. "pool-a/0" or "openai/gpt-4o-mini"
  std::string model;     // model it would serve the request with
  EndpointClass cls = EndpointClass::kLocal;
  std::string pool;                      // local: pool name
  std::string provider;                  // provider: provider name
  std::optional<double> queue_depth;     // vllm:num_requests_waiting; unset for providers
  std::optional<double> kv_cache_usage;  // 0..1; unset for providers
  double metrics_age_s = -1;             // seconds since last scrape; -1 never scraped
  double predicted_ttft_s = 0;           // router's prediction (seconds)
};

struct Removal {
  std::string endpoint;
  std::string policy;
  std::string reason;  // e.g. "excluded by class provider", "queue depth 12 > maxQueueDepth 8"
};

// What a dry-run policy would have done had it been enforced.
struct DryRunEffect {
  std::string policy;
  std::vector<Removal> would_remove;
  std::vector<Alternative> would_add_alternatives;
  bool would_reject = false;
};

struct Evaluation {
  uint64_t generation = 0;
  std::vector<std::string> matched;       // enforce and dry-run, evaluation order
  std::vector<Candidate> remaining;       // all considered models, input order
  std::vector<Removal> removed;           // by enforce policies
  std::vector<Alternative> alternatives;  // from enforce policies, first listing wins
  std::string chosen_model;               // requested model or a winning alternative
  std::vector<DryRunEffect> dry_run;
  // requestPriority of the first matching enforce policy (evaluation order) that sets it.
  std::optional<int64_t> request_priority;
  // The remaining candidates of chosen_model (what the router should pick among).
  std::vector<Candidate> ForChosenModel() const;
};

// True when `policy`'s match holds for `req` (tags judged on req.tags as given).
bool Matches(const Policy& policy, const RequestInfo& req);

// Names of the policies of `set` whose match holds for `req`, in evaluation order (what a
// rejected request's decision record lists as matched).
std::vector<std::string> MatchingPolicies(const PolicySet& set, const RequestInfo& req);

Result<Evaluation> Evaluate(const PolicySet& set, const RequestInfo& req,
                            std::span<const Candidate> candidates);

}  // namespace kinference::policy
