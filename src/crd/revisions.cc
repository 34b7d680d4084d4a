#include "crd/revisions.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <boost/json/serialize.hpp>

#include "crd/resources.h"
#include "k8s/resource.h"

namespace kinference::crd {
namespace json = boost::json;

namespace {
void Canonical(const json::value& v, std::string& out) {
  if (const json::object* o = v.if_object()) {
    std::vector<std::pair<std::string_view, const json::value*>> items;
    for (const auto& kv : *o) items.emplace_back(kv.key(), &kv.value());
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += ',';
      out += json::serialize(json::string(items[i].first));
      out += ':';
      Canonical(*items[i].second, out);
    }
    out += '}';
  } else if (const json::array* a = v.if_array()) {
    out += '[';
    for (size_t i = 0; i < a->size(); ++i) {
      if (i > 0) out += ',';
      Canonical((*a)[i], out);
    }
    out += ']';
  } else {
    out += json::serialize(v);
  }
}
}  // namespace

std::string CanonicalJson(const json::value& v) {
  std::string out;
  Canonical(v, out);
  return out;
}

std::string SpecHash(const json::value& spec) {
  std::string text = CanonicalJson(spec);
  return fmt::format("{:016x}", XXH64(text.data(), text.size(), 0));
}

int64_t RevisionNumber(const json::object& revision) {
  const json::value* v = revision.if_contains("revision");
  return v != nullptr && v->is_number() ? v->to_number<int64_t>() : 0;
}

const json::value* RevisionSpec(const json::object& revision) {
  return k8s::Find(revision, {"data", "spec"});
}

std::vector<json::object> SortedRevisions(std::vector<json::object> revisions) {
  std::stable_sort(revisions.begin(), revisions.end(), [](const auto& a, const auto& b) {
    return RevisionNumber(a) < RevisionNumber(b);
  });
  return revisions;
}

RevisionPlan PlanRevisions(const json::object& policy, const std::vector<json::object>& revisions,
                           int history_limit) {
  RevisionPlan plan;
  static const json::value kNull;
  const json::value* spec = policy.if_contains("spec");
  if (spec == nullptr) spec = &kNull;
  const std::string canonical = CanonicalJson(*spec);
  int64_t max_revision = 0;
  const json::object* same = nullptr;
  for (const auto& r : revisions) {
    max_revision = std::max(max_revision, RevisionNumber(r));
    const json::value* rs = RevisionSpec(r);
    if (rs != nullptr && CanonicalJson(*rs) == canonical) {
      if (same == nullptr || RevisionNumber(r) > RevisionNumber(*same)) same = &r;
    }
  }
  std::string current_name;
  if (same != nullptr) {
    current_name = std::string(k8s::NameOf(*same));
    plan.current_revision = RevisionNumber(*same);
    if (plan.current_revision < max_revision) {
      plan.renumber = current_name;
      plan.renumber_to = max_revision + 1;
      plan.current_revision = max_revision + 1;
    }
  } else {
    std::string hash = SpecHash(*spec);
    std::string policy_name(k8s::NameOf(policy));
    // Names are DNS-1123 subdomains of at most 253 characters.
    if (policy_name.size() > 253 - 17) policy_name.resize(253 - 17);
    while (!policy_name.empty() && (policy_name.back() == '-' || policy_name.back() == '.'))
      policy_name.pop_back();
    current_name = fmt::format("{}-{}", policy_name, hash);
    plan.current_revision = max_revision + 1;
    json::object labels{{kPolicyUidLabel, k8s::UidOf(policy)},
                        {kSpecHashLabel, hash},
                        {"app.kubernetes.io/managed-by", "kinference"}};
    json::object metadata{{"name", current_name},
                          {"namespace", k8s::NamespaceOf(policy)},
                          {"labels", std::move(labels)}};
    std::string_view cause =
        k8s::StringAt(policy, {"metadata", "annotations", kChangeCauseAnnotation});
    if (!cause.empty()) metadata["annotations"] = json::object{{kChangeCauseAnnotation, cause}};
    metadata["ownerReferences"] = json::array{json::object{{"apiVersion", kApiVersion},
                                                           {"kind", "InferencePolicy"},
                                                           {"name", k8s::NameOf(policy)},
                                                           {"uid", k8s::UidOf(policy)},
                                                           {"controller", true},
                                                           {"blockOwnerDeletion", true}}};
    plan.create = json::object{{"apiVersion", "apps/v1"},
                               {"kind", "ControllerRevision"},
                               {"metadata", std::move(metadata)},
                               {"data", json::object{{"spec", *spec}}},
                               {"revision", plan.current_revision}};
  }
  // History limit: the current revision counts; delete the oldest others beyond it.
  std::vector<std::pair<int64_t, std::string>> others;
  for (const auto& r : revisions) {
    std::string name(k8s::NameOf(r));
    if (name != current_name) others.emplace_back(RevisionNumber(r), name);
  }
  std::sort(others.begin(), others.end());
  size_t keep_others = history_limit > 1 ? static_cast<size_t>(history_limit - 1) : 0;
  if (others.size() > keep_others) {
    for (size_t i = 0; i < others.size() - keep_others; ++i)
      plan.remove.push_back(others[i].second);
  }
  return plan;
}

}  // namespace kinference::crd
