// Gateway config sections for InferencePolicy (docs/policy.md): which policy files to
// load and how often to poll them, and how requests are tagged before evaluation.
//
//   policies:
//     files: [policies/pii.yaml, /etc/kinference/local-first.yaml]
//     reload_interval_s: 2        # real seconds between mtime/size polls; 0: no polling,
//                                 # else >= 0.1 (a smaller value busy-polls the disk)
//     debug_admin_tenants: [ops]  # with `tenants:`, these see every tenant's decisions at
//                                 # GET /debug/decisions (others only their own)
//   tagging:
//     pii: true                   # built-in PII tagger (policy/taggers.h)
//     simple: true                # built-in "simple" tagger
//     simple_max_prompt_tokens: 256
//     trusted_tag_header: false   # honour x-kinference-tags (only behind a trusted proxy)
//     classifier:                 # optional external HTTP classifier
//       url: http://127.0.0.1:9000/classify  # http:// or https://; default port 80/443
//       timeout_s: 0.2            # real seconds for the whole call, in (0, 60]
//       name: pii-model           # tagger name reported on failure (default "classifier")
//
// Relative policy file paths are resolved against the directory of the config file by
// LoadGatewayConfig; ParseGatewayConfig (text without a file) leaves them as written,
// i.e. relative to the working directory. Unknown keys are errors.
//
// Errors: parsing throws ConfigError naming the field (start-up only).
//
// Thread-safety: plain data; the parsers are pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/references.h"

namespace YAML {
class Node;
}

namespace kinference::gateway {

struct GatewayConfig;

struct PoliciesConfig {
  std::vector<std::string> files;  // empty: no policies (generation 0)
  // 2 s: a policy edit takes effect within a couple of seconds, and a stat() of a few
  // files every 2 s costs nothing. Real seconds (file polling is not model time).
  double reload_interval_s = 2;
  // Tenants allowed to read every tenant's decisions at GET /debug/decisions.
  std::vector<std::string> debug_admin_tenants;
};

// 0.1 s: the smallest non-zero reload_interval_s; below it polling is a busy loop of stat()s.
inline constexpr double kMinReloadIntervalS = 0.1;
// 60 s: a classifier slower than this is not a pre-routing tagger.
inline constexpr double kMaxClassifierTimeoutS = 60;

struct ClassifierConfig {
  std::string url;  // as written
  std::string host;
  uint16_t port = 0;  // default 80 (http) or 443 (https)
  std::string path = "/";
  // 200 ms: a small classification model answers in tens of milliseconds; the timeout
  // bounds what a hung classifier adds to every request's TTFT. Real seconds.
  double timeout_s = 0.2;
  std::string name = "classifier";
  bool tls = false;  // https://
};

struct TaggingConfig {
  bool pii = true;
  bool simple = true;
  int64_t simple_max_prompt_tokens = 256;  // as policy::TaggerConfig
  bool trusted_tag_header = false;
  std::optional<ClassifierConfig> classifier;
};

PoliciesConfig ParsePoliciesConfig(const YAML::Node& node);
TaggingConfig ParseTaggingConfig(const YAML::Node& node);

// The pool, provider and model names `config` defines, for policy::CheckReferences.
policy::KnownNames PolicyReferenceNames(const GatewayConfig& config);

// Makes relative `files` absolute against `base_dir` (the config file's directory).
void ResolvePolicyPaths(PoliciesConfig& config, const std::string& base_dir);

}  // namespace kinference::gateway
