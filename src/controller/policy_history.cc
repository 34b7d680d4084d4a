#include "controller/policy_history.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <boost/json/serialize.hpp>
#include <iostream>
#include <memory>

#include "common/cli_exit.h"
#include "crd/revisions.h"
#include "k8s/kubeconfig.h"
#include "k8s/resource.h"
#include "k8s/rest_client.h"

namespace kinference::controller {
namespace json = boost::json;

namespace {

struct ClusterFlags {
  std::string kubeconfig;
  std::string context;
  std::string ns;
};

void AddClusterFlags(CLI::App* cmd, ClusterFlags& f) {
  cmd->add_option("--kubeconfig", f.kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, else in-cluster)");
  cmd->add_option("--context", f.context, "kubeconfig context (default: current-context)");
  cmd->add_option("-n,--namespace", f.ns, "namespace (default: the context's)");
}

// The policy and its revisions (sorted by number). Errors are printed; false then.
struct PolicyHistory {
  k8s::ClusterConfig config;
  std::string ns;
  json::object policy;
  std::vector<json::object> revisions;
  int64_t current = 0;  // the revision whose spec is the policy's, 0 when none
};

Result<PolicyHistory> Load(const ClusterFlags& flags, const std::string& name) {
  auto config = k8s::ResolveClusterConfig(flags.kubeconfig, flags.context);
  if (!config.ok()) return config.status();
  PolicyHistory h;
  h.config = *config;
  h.ns = flags.ns.empty() ? config->default_namespace : flags.ns;
  auto got = k8s::CallSync(h.config, "GET", k8s::ObjectPath(k8s::kInferencePolicies, h.ns, name));
  if (!got.ok()) return got.status();
  if (got->status == 404)
    return Status(ErrorCode::kNotFound,
                  fmt::format("inferencepolicy {} not found in namespace {}", name, h.ns));
  if (!got->ok()) return Status(ErrorCode::kUnavailable, k8s::ApiErrorMessage(*got));
  auto policy = k8s::ParseObject(*got);
  if (!policy.ok()) return policy.status();
  h.policy = std::move(*policy);
  std::string selector = fmt::format("{}={}", crd::kPolicyUidLabel, k8s::UidOf(h.policy));
  auto list = k8s::CallSync(h.config, "GET",
                            k8s::CollectionPath(k8s::kControllerRevisions, h.ns) +
                                "?labelSelector=" + k8s::QueryEscape(selector));
  if (!list.ok()) return list.status();
  if (!list->ok()) return Status(ErrorCode::kUnavailable, k8s::ApiErrorMessage(*list));
  auto obj = k8s::ParseObject(*list);
  if (!obj.ok()) return obj.status();
  if (const auto* items = obj->if_contains("items"); items && items->is_array()) {
    for (const auto& i : items->as_array())
      if (i.is_object()) h.revisions.push_back(i.as_object());
  }
  h.revisions = crd::SortedRevisions(std::move(h.revisions));
  static const json::value kNull;
  const json::value* spec = h.policy.if_contains("spec");
  std::string canonical = crd::CanonicalJson(spec ? *spec : kNull);
  for (const auto& r : h.revisions) {
    const json::value* rs = crd::RevisionSpec(r);
    if (rs != nullptr && crd::CanonicalJson(*rs) == canonical) h.current = crd::RevisionNumber(r);
  }
  return h;
}

std::string ToYaml(const json::value& v) {
  YAML::Emitter out;
  out << YAML::Load(json::serialize(v));
  return out.c_str();
}

int Fail(const Status& s) {
  std::cerr << "error: " << s.message() << "\n";
  return s.code() == ErrorCode::kInvalidArgument ? 2 : 1;
}

int History(const ClusterFlags& flags, const std::string& name, int64_t revision) {
  auto h = Load(flags, name);
  if (!h.ok()) return Fail(h.status());
  if (revision > 0) {
    for (const auto& r : h->revisions) {
      if (crd::RevisionNumber(r) != revision) continue;
      std::cout << fmt::format("inferencepolicy.kinference.io/{} with revision #{}\n", name,
                               revision);
      const json::value* spec = crd::RevisionSpec(r);
      std::cout << "spec:\n";
      std::string yaml = spec ? ToYaml(*spec) : "{}";
      // Indent under "spec:".
      std::string indented = "  ";
      for (char c : yaml) {
        indented += c;
        if (c == '\n') indented += "  ";
      }
      std::cout << indented << "\n";
      return 0;
    }
    return Fail(Status(ErrorCode::kNotFound,
                       fmt::format("unable to find revision {} of {}", revision, name)));
  }
  std::cout << fmt::format("inferencepolicy.kinference.io/{}\n", name);
  if (h->revisions.empty()) {
    std::cout << "no revisions (revisions are written by `kinference controller`)\n";
    return 0;
  }
  std::cout << fmt::format("{:<10}{:<9}{:<22}{}\n", "REVISION", "CURRENT", "CREATED",
                           "CHANGE-CAUSE");
  for (const auto& r : h->revisions) {
    int64_t n = crd::RevisionNumber(r);
    std::string_view cause =
        k8s::StringAt(r, {"metadata", "annotations", crd::kChangeCauseAnnotation});
    std::cout << fmt::format("{:<10}{:<9}{:<22}{}\n", n, n == h->current ? "*" : "",
                             k8s::StringAt(r, {"metadata", "creationTimestamp"}),
                             cause.empty() ? "<none>" : cause);
  }
  return 0;
}

int Rollback(const ClusterFlags& flags, const std::string& name, int64_t to_revision) {
  auto h = Load(flags, name);
  if (!h.ok()) return Fail(h.status());
  const json::object* target = nullptr;
  if (to_revision > 0) {
    for (const auto& r : h->revisions)
      if (crd::RevisionNumber(r) == to_revision) target = &r;
    if (target == nullptr)
      return Fail(Status(ErrorCode::kNotFound,
                         fmt::format("unable to find revision {} of {}", to_revision, name)));
  } else {
    // The newest revision other than the current one (kubectl: the previous revision).
    for (const auto& r : h->revisions)
      if (crd::RevisionNumber(r) != h->current) target = &r;
    if (target == nullptr)
      return Fail(Status(ErrorCode::kNotFound,
                         fmt::format("no previous revision of {} to roll back to", name)));
  }
  int64_t n = crd::RevisionNumber(*target);
  if (n == h->current) {
    std::cout << fmt::format(
        "inferencepolicy.kinference.io/{} skipped rollback (current spec already matches "
        "revision {})\n",
        name, n);
    return 0;
  }
  const json::value* spec = crd::RevisionSpec(*target);
  if (spec == nullptr)
    return Fail(Status(ErrorCode::kInternal, fmt::format("revision {} holds no spec", n)));
  json::object updated = h->policy;
  updated["spec"] = *spec;
  updated.erase("status");
  auto put = k8s::CallSync(h->config, "PUT", k8s::ObjectPath(k8s::kInferencePolicies, h->ns, name),
                           json::serialize(updated), "application/json");
  if (!put.ok()) return Fail(put.status());
  if (put->status == 409)
    return Fail(Status(ErrorCode::kUnavailable,
                       fmt::format("{} changed while rolling back; run the rollback again", name)));
  if (!put->ok()) return Fail(Status(ErrorCode::kUnavailable, k8s::ApiErrorMessage(*put)));
  std::cout << fmt::format("inferencepolicy.kinference.io/{} rolled back to revision {}\n", name,
                           n);
  return 0;
}

}  // namespace

void RegisterPolicyHistoryCommands(CLI::App& app) {
  CLI::App* found = nullptr;
  try {
    found = app.get_subcommand("policy");
  } catch (const CLI::OptionNotFound&) {
    found = app.add_subcommand("policy", "Inspect InferencePolicy resources");
    found->require_subcommand(1);
  }
  CLI::App& policy = *found;
  auto flags = std::make_shared<ClusterFlags>();
  auto name = std::make_shared<std::string>();
  auto revision = std::make_shared<int64_t>(0);
  auto* history = policy.add_subcommand(
      "history",
      "List an InferencePolicy's revisions in the cluster (like kubectl rollout history)");
  history->add_option("name", *name, "InferencePolicy name")->required();
  history->add_option("--revision", *revision, "print this revision's spec")
      ->check(CLI::PositiveNumber);
  AddClusterFlags(history, *flags);
  history->callback([=] { SetExitCode(History(*flags, *name, *revision)); });

  auto rflags = std::make_shared<ClusterFlags>();
  auto rname = std::make_shared<std::string>();
  auto to = std::make_shared<int64_t>(0);
  auto* rollback = policy.add_subcommand(
      "rollback", "Restore an InferencePolicy's spec from a revision (like kubectl rollout undo)");
  rollback->add_option("name", *rname, "InferencePolicy name")->required();
  rollback->add_option("--to-revision", *to, "revision to restore (default: the previous one)")
      ->check(CLI::PositiveNumber);
  AddClusterFlags(rollback, *rflags);
  rollback->callback([=] { SetExitCode(Rollback(*rflags, *rname, *to)); });
}

}  // namespace kinference::controller
