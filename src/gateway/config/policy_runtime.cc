#include "gateway/config/policy_runtime.h"

#include <spdlog/spdlog.h>

#include "gateway/upstream/http_classifier.h"

namespace kinference::gateway {
namespace {

// Rejects a set naming pools, providers or alternative models the gateway lacks; logs
// match.models naming unknown models (a warning only).
policy::PolicyStore::Validator ReferenceValidator(const GatewayConfig& config) {
  return [known = PolicyReferenceNames(config)](const policy::PolicySet& set) {
    policy::ReferenceReport r = policy::CheckReferences(set, known);
    for (const auto& w : r.warnings) spdlog::warn("policy reference: {}", w);
    if (r.errors.empty()) return Status::Ok();
    std::string msg;
    for (const auto& e : r.errors) msg += (msg.empty() ? "" : "\n") + e;
    return Status(ErrorCode::kInvalidArgument, msg);
  };
}

}  // namespace

PolicyRuntime::PolicyRuntime(const GatewayConfig& config, boost::asio::any_io_executor executor)
    : store(config.policies.files, ReferenceValidator(config)) {
  if (!config.policies.files.empty()) {
    Status s = store.Reload();
    if (!s.ok()) throw ConfigError("gateway config: policies.files: " + s.message());
  }
  const TaggingConfig& t = config.tagging;
  taggers.pii = t.pii;
  taggers.simple = t.simple;
  taggers.simple_max_prompt_tokens = t.simple_max_prompt_tokens;
  taggers.trust_tag_header = t.trusted_tag_header;
  if (t.classifier) {
    classifier_timeout_s = t.classifier->timeout_s;
    classifier = std::make_unique<HttpClassifier>(std::move(executor), *t.classifier);
  }
}

}  // namespace kinference::gateway
