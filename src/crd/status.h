// Status of kinference.io objects: metav1.Condition entries (type, status, reason, message,
// observedGeneration, lastTransitionTime; Kubernetes API conventions, "Typical status
// properties") and the merge patch the controller sends to the status subresource.
//
// Condition types written by the controller:
//   Accepted      True: the spec is valid (reason Accepted). False: reason Invalid, the
//                 message "FIELD.PATH: reason" from the loader (one line per problem).
//   ResolvedRefs  True: every referenced object exists (reason ResolvedRefs). False:
//                 SecretNotFound / ConfigMapNotFound / PoolNotFound / ProviderNotFound,
//                 the message naming the field path and the missing object.
// lastTransitionTime changes only when a condition's status changes (API conventions).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kinference::crd {

struct Condition {
  std::string type;
  bool status = true;  // "True" / "False"
  std::string reason;
  std::string message;
};

// The status object to write: `conditions` merged into the object's current
// status.conditions (others kept; lastTransitionTime kept for unchanged statuses, else
// `now`), observedGeneration = the object's metadata.generation, plus `extra` fields
// (e.g. currentRevision, apiKeys).
boost::json::object BuildStatus(const boost::json::object& obj,
                                const std::vector<Condition>& conditions, const std::string& now,
                                const boost::json::object& extra = {});

// True when `status` says nothing new compared with the object's current status
// (conditions' status, reason, message and observedGeneration, and the extra fields):
// writing it would only bump resourceVersion and wake every watcher.
bool StatusUnchanged(const boost::json::object& obj, const boost::json::object& status);

// The merge patch body {"status": status}.
std::string StatusPatch(const boost::json::object& status);

// The condition of `type` in obj's status, if any.
std::optional<Condition> FindCondition(const boost::json::object& obj, const std::string& type);

}  // namespace kinference::crd
