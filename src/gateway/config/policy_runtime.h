// PolicyRuntime: the InferencePolicy state one gateway shares across requests: the
// policy store (current set, hot reload), the decision log served at GET
// /debug/decisions, per-policy counters, the tagger settings and the optional external
// classifier. Built once at start-up from GatewayConfig; the request-path logic that
// uses it is in policy_gate.h.
//
// Errors: the constructor loads the configured policy files and throws ConfigError
// naming file, field and reason when they are invalid or name pools, providers or
// alternative models the config lacks (start-up only); every reload applies the same
// reference check (policy/references.h), so such a set is rejected then too.
//
// Thread-safety: PolicyStore, DecisionLog and PolicyCounters are safe from any thread;
// the classifier and the rest are used on the gateway's io_context thread only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "gateway/config/config.h"
#include "policy/decision_log.h"
#include "policy/store.h"
#include "policy/taggers.h"

namespace kinference::gateway {

struct PolicyRuntime {
  // Throws ConfigError when config.policies.files do not load.
  PolicyRuntime(const GatewayConfig& config, boost::asio::any_io_executor executor);

  policy::PolicyStore store;
  policy::DecisionLog log;
  policy::PolicyCounters counters;
  policy::TaggerConfig taggers;
  double classifier_timeout_s = 0;                         // real seconds
  std::unique_ptr<policy::ExternalClassifier> classifier;  // null: none configured
};

}  // namespace kinference::gateway
