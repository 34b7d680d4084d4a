#include "gateway/config/policy_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "gateway/config/config.h"
#include "gateway/config/config_fields.h"
#include "gateway/config/config_keys.h"

namespace kinference::gateway {

using config_fields::CheckKeys;
using config_fields::Fail;
using config_fields::NonEmptyString;
using config_fields::NonNegative;
using config_fields::Positive;
using config_fields::Scalar;

PoliciesConfig ParsePoliciesConfig(const YAML::Node& node) {
  if (!node.IsMap()) Fail("policies", "expected a map with files, reload_interval_s");
  CheckKeys(node, "policies", ConfigSection("policies"));
  PoliciesConfig c;
  if (const YAML::Node files = node["files"]) {
    if (!files.IsSequence()) Fail("policies.files", "expected a list of paths");
    for (size_t i = 0; i < files.size(); ++i) {
      c.files.push_back(NonEmptyString(files[i], "policies.files[" + std::to_string(i) + "]"));
    }
  }
  if (node["reload_interval_s"]) {
    c.reload_interval_s =
        config_fields::DurationS(node["reload_interval_s"], "policies.reload_interval_s", true);
    if (c.reload_interval_s != 0 && c.reload_interval_s < kMinReloadIntervalS)
      Fail("policies.reload_interval_s", "must be 0 (no polling) or >= 0.1");
  }
  if (const YAML::Node admins = node["debug_admin_tenants"]) {
    if (!admins.IsSequence()) Fail("policies.debug_admin_tenants", "expected a list of tenants");
    for (size_t i = 0; i < admins.size(); ++i) {
      c.debug_admin_tenants.push_back(
          NonEmptyString(admins[i], "policies.debug_admin_tenants[" + std::to_string(i) + "]"));
    }
  }
  return c;
}

namespace {

// http(s)://host[:port][/path]; the port defaults to the scheme's (80, 443) as for
// providers.
void ParseClassifierUrl(ClassifierConfig& c, const std::string& field) {
  config_fields::HttpUrl u = config_fields::ParseHttpUrl(c.url, field);
  c.tls = u.tls;
  c.host = std::move(u.host);
  c.port = u.port;
  c.path = u.path.empty() ? "/" : std::move(u.path);
}

ClassifierConfig ParseClassifier(const YAML::Node& node) {
  const std::string where = "tagging.classifier";
  if (!node.IsMap()) Fail(where, "expected a map with url, timeout_s, name");
  CheckKeys(node, where, ConfigSection("tagging.classifier"));
  ClassifierConfig c;
  c.url = NonEmptyString(node["url"], where + ".url");
  ParseClassifierUrl(c, where + ".url");
  if (node["timeout_s"]) {
    c.timeout_s = Positive(node["timeout_s"], where + ".timeout_s");
    if (c.timeout_s > kMaxClassifierTimeoutS) Fail(where + ".timeout_s", "must be in (0, 60]");
  }
  if (node["name"]) c.name = NonEmptyString(node["name"], where + ".name");
  return c;
}

}  // namespace

TaggingConfig ParseTaggingConfig(const YAML::Node& node) {
  if (!node.IsMap()) Fail("tagging", "expected a map");
  CheckKeys(node, "tagging", ConfigSection("tagging"));
  TaggingConfig c;
  if (node["pii"]) c.pii = Scalar<bool>(node["pii"], "tagging.pii", "true or false");
  if (node["simple"]) c.simple = Scalar<bool>(node["simple"], "tagging.simple", "true or false");
  if (node["simple_max_prompt_tokens"]) {
    auto v = Scalar<long long>(node["simple_max_prompt_tokens"], "tagging.simple_max_prompt_tokens",
                               "an integer");
    if (v < 0) Fail("tagging.simple_max_prompt_tokens", "must be >= 0");
    c.simple_max_prompt_tokens = v;
  }
  if (node["trusted_tag_header"]) {
    c.trusted_tag_header =
        Scalar<bool>(node["trusted_tag_header"], "tagging.trusted_tag_header", "true or false");
  }
  if (node["classifier"]) c.classifier = ParseClassifier(node["classifier"]);
  return c;
}

policy::KnownNames PolicyReferenceNames(const GatewayConfig& config) {
  policy::KnownNames k;
  for (const auto& p : config.pools) {
    k.pools.insert(p.name);
    if (!p.model.empty()) k.models.insert(p.model);  // --kubernetes settings: none
  }
  for (const auto& p : config.providers) {
    k.providers.insert(p.name);
    k.models.insert(p.serves_model);
  }
  return k;
}

void ResolvePolicyPaths(PoliciesConfig& config, const std::string& base_dir) {
  for (auto& f : config.files) {
    std::filesystem::path p(f);
    if (p.is_relative()) f = (std::filesystem::path(base_dir) / p).lexically_normal().string();
  }
}

}  // namespace kinference::gateway
