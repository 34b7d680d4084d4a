// Kubernetes resource types and object accessors: the REST paths of the kinds Kinference
// reads and writes, and readers for the metadata fields every object carries.
//
// Paths follow the Kubernetes API conventions ("API Concepts", kubernetes.io/docs/
// reference/using-api/api-concepts/): core kinds under /api/v1, others under
// /apis/GROUP/VERSION; namespaced collections at .../namespaces/NS/RESOURCE, one object at
// .../RESOURCE/NAME, its status subresource at .../NAME/status.
//
// Objects are Boost.JSON objects exactly as the API server sends them; readers return
// empty values for absent or mistyped fields (the API server validated them).
//
// Thread-safety: constants and pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kinference::k8s {

struct ResourceType {
  std::string_view group;     // "" for the core group
  std::string_view version;   // "v1"
  std::string_view resource;  // plural, lower case: "pods"
  std::string_view kind;      // "Pod"
  bool namespaced = true;
  // "v1" or "GROUP/VERSION", as in an object's apiVersion.
  std::string ApiVersion() const;
};

inline constexpr ResourceType kPods{"", "v1", "pods", "Pod"};
inline constexpr ResourceType kSecrets{"", "v1", "secrets", "Secret"};
inline constexpr ResourceType kConfigMaps{"", "v1", "configmaps", "ConfigMap"};
inline constexpr ResourceType kLeases{"coordination.k8s.io", "v1", "leases", "Lease"};
inline constexpr ResourceType kControllerRevisions{"apps", "v1", "controllerrevisions",
                                                   "ControllerRevision"};
// Gateway API Inference Extension (gateway-api-inference-extension, api/v1).
inline constexpr ResourceType kInferencePools{"inference.networking.k8s.io", "v1", "inferencepools",
                                              "InferencePool"};
// Kinference's own (deploy/helm/kinference/crds/).
inline constexpr ResourceType kInferencePolicies{"kinference.io", "v1alpha1", "inferencepolicies",
                                                 "InferencePolicy"};
inline constexpr ResourceType kInferenceProviders{"kinference.io", "v1alpha1", "inferenceproviders",
                                                  "InferenceProvider"};
inline constexpr ResourceType kInferenceTenants{"kinference.io", "v1alpha1", "inferencetenants",
                                                "InferenceTenant"};

// The collection path; `ns` empty for all namespaces (or a cluster-scoped type).
std::string CollectionPath(const ResourceType& type, std::string_view ns);
// One object's path, and its status subresource.
std::string ObjectPath(const ResourceType& type, std::string_view ns, std::string_view name);
std::string StatusPath(const ResourceType& type, std::string_view ns, std::string_view name);

// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay).
std::string QueryEscape(std::string_view value);

// "namespace/name" (just "name" for cluster-scoped objects): the cache key, as client-go's
// MetaNamespaceKeyFunc.
using ObjectKey = std::string;
ObjectKey KeyOf(std::string_view ns, std::string_view name);

using ObjectPtr = std::shared_ptr<const boost::json::object>;

// metadata fields.
std::string_view NameOf(const boost::json::object& obj);
std::string_view NamespaceOf(const boost::json::object& obj);
std::string_view UidOf(const boost::json::object& obj);
std::string_view ResourceVersionOf(const boost::json::object& obj);
int64_t GenerationOf(const boost::json::object& obj);
ObjectKey KeyOf(const boost::json::object& obj);
// metadata.labels[key], or "" when absent.
std::string_view LabelOf(const boost::json::object& obj, std::string_view key);

// The object at a JSON path of member names ({"spec", "selector"}), or null.
const boost::json::value* Find(const boost::json::object& obj,
                               std::initializer_list<std::string_view> path);
std::string_view StringAt(const boost::json::object& obj,
                          std::initializer_list<std::string_view> path);
const boost::json::object* ObjectAt(const boost::json::object& obj,
                                    std::initializer_list<std::string_view> path);

}  // namespace kinference::k8s
