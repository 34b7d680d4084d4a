#include "gateway/config/policy_cli.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "gateway/config/config.h"
#include "policy/policy.h"
#include "policy/references.h"

namespace kinference::gateway {

using namespace policy;  // NOLINT: this file is the policy library's CLI

namespace {

std::string Summary(const Policy& p) {
  std::string s = fmt::format("{}: priority={} mode={}", p.name, p.priority, ToString(p.mode));
  const auto& m = p.match;
  std::vector<std::string> parts;
  if (!m.tenants.empty()) parts.push_back(fmt::format("tenants={}", fmt::join(m.tenants, ",")));
  if (!m.models.empty()) parts.push_back(fmt::format("models={}", fmt::join(m.models, ",")));
  if (!m.tags.any_of.empty())
    parts.push_back(fmt::format("tags.anyOf={}", fmt::join(m.tags.any_of, ",")));
  if (!m.tags.all_of.empty())
    parts.push_back(fmt::format("tags.allOf={}", fmt::join(m.tags.all_of, ",")));
  if (!m.tags.none_of.empty())
    parts.push_back(fmt::format("tags.noneOf={}", fmt::join(m.tags.none_of, ",")));
  s += parts.empty() ? " match=all" : fmt::format(" match[{}]", fmt::join(parts, " "));
  const auto& c = p.constraints;
  int n = (c.include ? 1 : 0) + (c.exclude.empty() ? 0 : 1) + (c.when.empty() ? 0 : 1) +
          (c.prefer.empty() ? 0 : 1);
  s += fmt::format(" constraints={} alternatives={} ({})", n, p.alternatives.size(), p.source);
  return s;
}

}  // namespace

void RegisterPolicyCommand(CLI::App& app) {
  auto* policy = app.add_subcommand("policy", "Inspect InferencePolicy resources");
  policy->require_subcommand(1);
  auto files = std::make_shared<std::vector<std::string>>();
  auto* validate = policy->add_subcommand(
      "validate", "Validate InferencePolicy YAML files (exit 0 if valid, 1 with errors)");
  validate->add_option("files", *files, "Policy files (YAML, multi-document allowed)")->required();
  auto gateway_config = std::make_shared<std::string>();
  validate->add_option("--gateway-config", *gateway_config,
                       "Gateway config: also check that the pools, providers and models the "
                       "policies name exist there");
  validate->callback([files, gateway_config] {
    auto set = LoadPolicySet(*files);
    if (!set.ok()) {
      std::cerr << set.status().message() << "\n";
      SetExitCode(1);
      return;
    }
    if (!gateway_config->empty()) {
      KnownNames known;
      try {
        known = PolicyReferenceNames(LoadGatewayConfig(*gateway_config));
      } catch (const ConfigError& e) {
        std::cerr << *gateway_config << ": " << e.what() << "\n";
        SetExitCode(1);
        return;
      }
      ReferenceReport refs = CheckReferences(*set, known);
      for (const auto& w : refs.warnings) std::cerr << "warning: " << w << "\n";
      if (!refs.errors.empty()) {
        for (const auto& e : refs.errors) std::cerr << e << "\n";
        SetExitCode(1);
        return;
      }
    }
    for (const auto& p : set->policies) std::cout << Summary(p) << "\n";
    std::cout << fmt::format("{} policies valid in {} files\n", set->policies.size(),
                             files->size());
    SetExitCode(0);
  });
}

}  // namespace kinference::gateway
