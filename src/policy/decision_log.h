// Decision records for the gateway: the `x-kinference-decision` response header, a bounded
// ring of recent decisions (served as JSON at GET /debug/decisions) and per-policy
// counters. Gateway-facing helpers kept in the policy library so that the request-path
// wiring stays a few lines; no I/O here.
//
// Thread-safety: DecisionLog and PolicyCounters are safe from any thread (one mutex each);
// the free functions are pure.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "policy/evaluate.h"

namespace kinference::policy {

inline constexpr std::string_view kDecisionHeader = "x-kinference-decision";

struct DecisionRecord {
  // Model seconds on the gateway's clock (RealClock scaled by time_scale, counted from
  // the gateway's start), not wall-clock time.
  Seconds at = 0;
  std::string request_id;
  std::string tenant;
  std::string model;         // requested
  std::string chosen_model;  // after alternatives
  uint64_t generation = 0;
  std::vector<std::string> matched;
  std::string outcome;   // "routed" | "rejected"
  std::string endpoint;  // routed: the endpoint picked
  std::optional<double> predicted_ttft_s;
  std::string message;      // rejected: the error message
  std::string rejected_by;  // rejected: the policy that rejected it (empty: none named)
  std::vector<Removal> removed;
  std::vector<DryRunEffect> dry_run;
};

// A routed request's record from its evaluation and the router's pick.
DecisionRecord RoutedRecord(const Evaluation& ev, const RequestInfo& req, Seconds at,
                            std::string request_id, std::string endpoint, double predicted_ttft_s);
// A rejected request's record. `matched`: the policies whose match held
// (MatchingPolicies); the rejecting policy is added when missing.
DecisionRecord RejectedRecord(const Status& rejection, const RequestInfo& req, uint64_t generation,
                              Seconds at, std::string request_id,
                              std::vector<std::string> matched = {});

// Header value, e.g. "generation=3; policies=pii-local-only,local-first;
// endpoint=a/0; predicted_ttft_s=0.412" ("policies=-" when none matched; endpoint and
// prediction omitted when rejected).
std::string DecisionHeaderValue(const DecisionRecord& r);

// The policy named by a rejection from Evaluate ("... policy 'NAME' ..."); empty if none.
std::string RejectingPolicy(const Status& rejection);

// The `capacity` most recent decisions.
class DecisionLog {
 public:
  explicit DecisionLog(size_t capacity = 256) : capacity_(capacity) {}
  void Add(DecisionRecord record);
  std::vector<DecisionRecord> Snapshot() const;  // oldest first
  // {"decisions": [...]} oldest first; field names as in DecisionRecord. With `keep`, only
  // the records it accepts (e.g. one tenant's).
  std::string ToJson(const std::function<bool(const DecisionRecord&)>& keep = {}) const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<DecisionRecord> ring_;
};

// Counts per (policy, outcome), each at most once per request, so that a rate is "requests
// per second": "matched" (routed or rejected, the policy's match held), "removed" (the
// policy removed at least one candidate), "rejected" (the policy rejected the request),
// "dry_run_would_reject".
class PolicyCounters {
 public:
  void Record(const DecisionRecord& r);
  std::map<std::pair<std::string, std::string>, uint64_t> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;
};

}  // namespace kinference::policy
