// Kinference's custom resources (group kinference.io, version v1alpha1; CRDs in
// deploy/helm/kinference/crds/) and the InferencePool of the Gateway API Inference
// Extension, read from the JSON objects the API server sends into plain structs. The
// controller validates with these readers and the gateway (`--kubernetes`) builds its
// configuration with them, so both accept and refuse exactly the same objects.
//
// - InferencePolicy: the object's spec goes through the file loader (policy/policy.h,
//   ParsePolicies): one parser for both forms.
// - InferenceProvider, InferenceTenant: read here, strictly (unknown fields are errors
//   even though the API server prunes them: an object written while an older CRD was
//   installed must not be half-understood).
// - InferencePool (inference.networking.k8s.io/v1): spec.selector.matchLabels and every
//   spec.targetPorts[].number (up to 8, distinct: the Inference Extension's data-parallel
//   ranks, one model server per port on each Pod; each port is an endpoint of its own,
//   ClusterState); other fields (endpointPickerRef, ...) are ignored, so pools written for
//   the Gateway API Inference Extension work unchanged.
//
// Errors: kInvalidArgument whose message lists one "FIELD.PATH: reason" per problem (e.g.
// "spec.models[1].name: required"); FieldPathOf extracts the first path.
//
// Thread-safety: pure functions over immutable input.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "accounting/limits.h"
#include "common/status.h"
#include "policy/policy.h"

namespace kinference::crd {

inline constexpr const char* kGroup = "kinference.io";
inline constexpr const char* kApiVersion = "kinference.io/v1alpha1";

// --- InferencePolicy -------------------------------------------------------------------

// The policy in `obj` (an InferencePolicy as the API server sends it): metadata.name and
// the spec, through policy::ParsePolicies. `source` is set to "InferencePolicy NS/NAME".
// Error lines read "spec.constraints.exclude.classes[0]: unknown class ...".
Result<policy::Policy> PolicyFromObject(const boost::json::object& obj);

// --- InferenceProvider ---------------------------------------------------------------

struct SecretKeyRef {
  std::string name;
  std::string key;  // empty: every key (InferenceTenant apiKeys only)
};

struct ProviderModel {
  std::string name;          // at the provider
  std::string serves_model;  // the gateway model name (default: name)
};

struct ProviderSpec {
  std::string name;            // metadata.name
  std::string ns;              // metadata.namespace
  std::string api = "openai";  // openai | anthropic
  std::string base_url;
  std::vector<ProviderModel> models;
  SecretKeyRef api_key;
  // caBundle: from a Secret or a ConfigMap (kind "Secret" / "ConfigMap"), or none.
  std::string ca_kind;
  SecretKeyRef ca;
  double timeout_s = 0;  // 0: the gateway's request_timeout_s
  int retries_before_first_byte = 1;
  int breaker_failures = 5;        // Envoy outlier detection default
  double breaker_cooldown_s = 30;  // Envoy outlier detection default
  std::string anthropic_version = "2023-06-01";
  int default_max_tokens = 4096;
};

Result<ProviderSpec> ProviderFromObject(const boost::json::object& obj);

// --- InferenceTenant -----------------------------------------------------------------

struct TenantSpec {
  std::string name;
  std::string ns;
  std::vector<SecretKeyRef> api_keys;
  // Empty: no restriction of that kind.
  std::vector<std::string> models;
  std::vector<std::string> pools;
  std::vector<std::string> providers;
  // spec.limits (accounting::TenantLimitsFromJson: camelCase keys, spend as decimal
  // strings); absent: the gateway config's accounting.limits apply to the tenant.
  std::optional<accounting::TenantLimits> limits;
};

Result<TenantSpec> TenantFromObject(const boost::json::object& obj);

// The values of a Secret's `data` (base64-decoded) under `key`, or all of them when `key`
// is empty. Errors: kNotFound "secret NAME has no key KEY", kInvalidArgument for bad
// base64.
Result<std::vector<std::string>> SecretValues(const boost::json::object& secret,
                                              const std::string& key);
// A ConfigMap's data[key] (or binaryData[key], base64); kNotFound when absent.
Result<std::string> ConfigMapValue(const boost::json::object& config_map, const std::string& key);

// --- InferencePool (Gateway API Inference Extension) ---------------------------------

struct PoolSpec {
  std::string name;
  std::string ns;
  std::map<std::string, std::string> match_labels;
  std::vector<uint16_t> target_ports;  // in spec order; at least one
};

Result<PoolSpec> PoolFromObject(const boost::json::object& obj);

// A Pod is an endpoint when its Ready condition is True, it has status.podIP, and it is
// not being deleted (metadata.deletionTimestamp unset), as EndpointSlice controllers
// decide readiness.
bool PodReady(const boost::json::object& pod);
std::string PodIp(const boost::json::object& pod);
// Every matchLabels entry equals the Pod's label (an empty selector selects nothing, as
// an InferencePool requires matchLabels).
bool Selects(const PoolSpec& pool, const boost::json::object& pod);

// The first "FIELD.PATH" of an error message from the readers above ("spec" when none).
std::string FieldPathOf(const std::string& message);

}  // namespace kinference::crd
