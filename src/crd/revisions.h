// InferencePolicy revision history, kept as apps/v1 ControllerRevision objects the way the
// StatefulSet controller keeps its history (k8s.io/kubernetes pkg/controller/history):
//
// - Every accepted spec is one ControllerRevision in the policy's namespace, named
//   "<policy>-<hash>" (hash: XXH64 of the canonical spec JSON, keys sorted), labelled
//   kinference.io/policy-uid=<policy uid> and kinference.io/spec-hash=<hash>, owned by the
//   policy (ownerReferences with controller: true, so deleting the policy lets the garbage
//   collector delete its history), `data: {spec: ...}`, `revision: N`.
// - Identical specs are one revision: returning to an earlier spec (a rollback, or an edit
//   back) renumbers that revision to max + 1 instead of creating a copy, as StatefulSets
//   and Deployments do (`kubectl rollout undo` makes the old revision the newest).
// - At most `history_limit` revisions are kept (StatefulSet's revisionHistoryLimit
//   default, 10); the oldest beyond that are deleted, never the current one.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kinference::crd {

inline constexpr int kDefaultRevisionHistoryLimit = 10;
inline constexpr const char* kPolicyUidLabel = "kinference.io/policy-uid";
inline constexpr const char* kSpecHashLabel = "kinference.io/spec-hash";
// Copied from the policy onto the revision it creates (kubectl's convention).
inline constexpr const char* kChangeCauseAnnotation = "kubernetes.io/change-cause";

// `v` serialized with object keys sorted at every level (equal values, equal text).
std::string CanonicalJson(const boost::json::value& v);
// The hash label value of a spec (16 lower-case hex digits).
std::string SpecHash(const boost::json::value& spec);

struct RevisionPlan {
  std::optional<boost::json::object> create;  // a new ControllerRevision to POST
  std::string renumber;                       // name of a revision to renumber, or ""
  int64_t renumber_to = 0;
  std::vector<std::string> remove;  // names to DELETE (oldest beyond the limit)
  int64_t current_revision = 0;     // the revision number of the policy's spec
};

// What to do so that `revisions` (the ControllerRevisions labelled with the policy's uid)
// hold the policy's current spec as the newest revision and at most `history_limit`.
RevisionPlan PlanRevisions(const boost::json::object& policy,
                           const std::vector<boost::json::object>& revisions,
                           int history_limit = kDefaultRevisionHistoryLimit);

// A revision's number (`revision`), its spec (`data.spec`), or null/0.
int64_t RevisionNumber(const boost::json::object& revision);
const boost::json::value* RevisionSpec(const boost::json::object& revision);

// Revisions sorted by number, ascending.
std::vector<boost::json::object> SortedRevisions(std::vector<boost::json::object> revisions);

}  // namespace kinference::crd
