// Where the Kubernetes API server is and how to authenticate to it: a kubeconfig file or
// the in-cluster service account.
//
// Kubeconfig (kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/,
// the v1 Config of k8s.io/client-go/tools/clientcmd/api/v1): the context named
// `current-context` (or the one given) picks a cluster and a user. Supported fields:
//   clusters[].cluster: server (https://host[:port][/prefix] or http://...),
//     certificate-authority (file) | certificate-authority-data (base64 PEM)
//   users[].user: token | tokenFile, client-certificate | client-certificate-data,
//     client-key | client-key-data
//   contexts[].context: cluster, user, namespace
// Relative file paths are resolved against the kubeconfig's directory, as clientcmd does.
// Refused with a clear error (never silently ignored): insecure-skip-tls-verify: true,
// exec and auth-provider users (plugins Kinference does not run).
//
// In-cluster (kubernetes.io/docs/tasks/run-application/access-api-from-pod/): server from
// $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, CA and namespace from the service
// account directory /var/run/secrets/kubernetes.io/serviceaccount (ca.crt, namespace) and
// the bearer token from its `token` file, which the kubelet rotates: RestClient re-reads it
// (token_file), never caching it for longer than a minute.
//
// Errors: kInvalidArgument naming the file and field (kubeconfig), kNotFound when a file
// cannot be read or no configuration is found. Called at start-up only.
//
// Thread-safety: pure functions (they read files); ClusterConfig is plain data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kinference::k8s {

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

struct ClusterConfig {
  std::string server;  // as written
  std::string host;
  uint16_t port = 443;
  bool tls = true;
  std::string path_prefix;  // "" or "/prefix" (no trailing slash), put before API paths
  std::string ca_file;      // absolute; or
  std::string ca_pem;       // PEM text
  std::string token;        // a static bearer token; or
  std::string token_file;   // re-read as it rotates
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string default_namespace = "default";
  std::string source;  // for logs: "kubeconfig /path (context x)" or "in-cluster"
};

// Parses kubeconfig text; `path` names it in errors and anchors relative paths.
Result<ClusterConfig> ParseKubeconfig(std::string_view yaml_text, const std::string& path,
                                      const std::string& context = "");
Result<ClusterConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// In-cluster configuration from `host`/`port` (the KUBERNETES_SERVICE_* values) and the
// service account directory `sa_dir`.
Result<ClusterConfig> InClusterConfig(std::string_view host, std::string_view port,
                                      const std::string& sa_dir = std::string(kServiceAccountDir));

// The configuration a process uses, as controller-runtime's GetConfig orders it:
// `kubeconfig_flag` when given, else $KUBECONFIG, else in-cluster when
// $KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
Result<ClusterConfig> ResolveClusterConfig(const std::string& kubeconfig_flag,
                                           const std::string& context = "");

// Standard base64 (RFC 4648 section 4), padding optional; false on any other character.
bool Base64Decode(std::string_view in, std::string& out);

}  // namespace kinference::k8s
