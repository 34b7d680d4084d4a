#include "controller/reconcile.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "crd/resources.h"
#include "crd/revisions.h"
#include "crd/status.h"

namespace kinference::controller {
namespace json = boost::json;

namespace {

using crd::Condition;

Condition Accepted() { return Condition{"Accepted", true, "Accepted", "The spec is valid."}; }
Condition Invalid(const std::string& message) {
  return Condition{"Accepted", false, "Invalid", message};
}
Condition Resolved() {
  return Condition{"ResolvedRefs", true, "ResolvedRefs", "Every referenced object exists."};
}

bool Has(const k8s::ObjectCache* cache, std::string_view ns, std::string_view name) {
  return cache != nullptr && cache->Get(k8s::KeyOf(ns, name)) != nullptr;
}

void Propose(Actions& actions, const k8s::ResourceType& type, const json::object& obj,
             const std::vector<Condition>& conditions, const std::string& now,
             const json::object& extra = {}) {
  json::object status = crd::BuildStatus(obj, conditions, now, extra);
  if (crd::StatusUnchanged(obj, status)) return;
  actions.statuses.push_back(
      StatusUpdate{type, std::string(k8s::NamespaceOf(obj)), std::string(k8s::NameOf(obj)),
                   std::string(k8s::ResourceVersionOf(obj)), std::move(status)});
}

// Missing references of a policy's selectors: "FIELD: reason" lines, and the reason code.
void CheckSelectorRefs(const policy::Selector& s, const std::string& path, std::string_view ns,
                       const Snapshot& snap, std::vector<std::string>& problems,
                       std::string& reason) {
  for (size_t i = 0; i < s.pools.size(); ++i) {
    if (!Has(snap.pools, ns, s.pools[i])) {
      problems.push_back(
          fmt::format("{}.pools[{}]: InferencePool '{}' not found", path, i, s.pools[i]));
      if (reason.empty()) reason = "PoolNotFound";
    }
  }
  for (size_t i = 0; i < s.providers.size(); ++i) {
    if (!Has(snap.providers, ns, s.providers[i])) {
      problems.push_back(fmt::format("{}.providers[{}]: InferenceProvider '{}' not found", path, i,
                                     s.providers[i]));
      if (reason.empty()) reason = "ProviderNotFound";
    }
  }
}

Condition RefsCondition(const std::vector<std::string>& problems, const std::string& reason) {
  if (problems.empty()) return Resolved();
  std::string msg;
  for (const auto& p : problems) msg += (msg.empty() ? "" : "\n") + p;
  return Condition{"ResolvedRefs", false, reason, msg};
}

void ReconcilePolicies(const Snapshot& snap, const std::string& now, int limit, Actions& actions) {
  // Revisions grouped by owner uid.
  std::map<std::string, std::vector<json::object>> by_uid;
  if (snap.revisions != nullptr) {
    for (const auto& [key, rev] : snap.revisions->items()) {
      std::string uid(k8s::LabelOf(*rev, crd::kPolicyUidLabel));
      if (!uid.empty()) by_uid[uid].push_back(*rev);
    }
  }
  std::set<std::string> live_uids;
  if (snap.policies != nullptr) {
    for (const auto& [key, obj] : snap.policies->items()) {
      std::string uid(k8s::UidOf(*obj));
      live_uids.insert(uid);
      auto parsed = crd::PolicyFromObject(*obj);
      if (!parsed.ok()) {
        Propose(actions, k8s::kInferencePolicies, *obj, {Invalid(parsed.status().message())}, now);
        continue;
      }
      std::vector<std::string> problems;
      std::string reason;
      std::string_view ns = k8s::NamespaceOf(*obj);
      const auto& c = parsed->constraints;
      if (c.include)
        CheckSelectorRefs(*c.include, "spec.constraints.include", ns, snap, problems, reason);
      CheckSelectorRefs(c.exclude, "spec.constraints.exclude", ns, snap, problems, reason);
      CheckSelectorRefs(c.prefer, "spec.constraints.prefer", ns, snap, problems, reason);
      crd::RevisionPlan plan = crd::PlanRevisions(*obj, by_uid[uid], limit);
      if (plan.create) actions.creates.push_back(RevisionCreate{std::move(*plan.create)});
      if (!plan.renumber.empty())
        actions.renumbers.push_back(
            RevisionRenumber{std::string(ns), plan.renumber, plan.renumber_to});
      for (auto& name : plan.remove)
        actions.deletes.push_back(RevisionDelete{std::string(ns), name});
      Propose(actions, k8s::kInferencePolicies, *obj, {Accepted(), RefsCondition(problems, reason)},
              now, json::object{{"currentRevision", plan.current_revision}});
    }
  }
  // History whose policy is gone (no garbage collector, or it has not run yet).
  for (const auto& [uid, revs] : by_uid) {
    if (live_uids.count(uid) != 0) continue;
    for (const auto& r : revs)
      actions.deletes.push_back(
          RevisionDelete{std::string(k8s::NamespaceOf(r)), std::string(k8s::NameOf(r))});
  }
}

// "FIELD: Secret 'x' not found" etc. for one reference.
void CheckSecretRef(const Snapshot& snap, std::string_view ns, const crd::SecretKeyRef& ref,
                    const std::string& path, std::vector<std::string>& problems,
                    std::string& reason, int* values = nullptr) {
  k8s::ObjectPtr secret =
      snap.secrets == nullptr ? nullptr : snap.secrets->Get(k8s::KeyOf(ns, ref.name));
  if (secret == nullptr) {
    problems.push_back(fmt::format("{}.name: Secret '{}' not found", path, ref.name));
    if (reason.empty()) reason = "SecretNotFound";
    return;
  }
  auto v = crd::SecretValues(*secret, ref.key);
  if (!v.ok()) {
    problems.push_back(
        fmt::format("{}: {}", ref.key.empty() ? path : path + ".key", v.status().message()));
    if (reason.empty()) reason = "SecretKeyNotFound";
    return;
  }
  if (values != nullptr) *values += static_cast<int>(v->size());
}

void ReconcileProviders(const Snapshot& snap, const std::string& now, Actions& actions) {
  if (snap.providers == nullptr) return;
  for (const auto& [key, obj] : snap.providers->items()) {
    auto p = crd::ProviderFromObject(*obj);
    if (!p.ok()) {
      Propose(actions, k8s::kInferenceProviders, *obj, {Invalid(p.status().message())}, now);
      continue;
    }
    std::vector<std::string> problems;
    std::string reason;
    CheckSecretRef(snap, p->ns, p->api_key, "spec.apiKeySecretRef", problems, reason);
    if (p->ca_kind == "Secret") {
      CheckSecretRef(snap, p->ns, p->ca, "spec.caBundle.secretRef", problems, reason);
    } else if (p->ca_kind == "ConfigMap") {
      k8s::ObjectPtr cm = snap.config_maps == nullptr
                              ? nullptr
                              : snap.config_maps->Get(k8s::KeyOf(p->ns, p->ca.name));
      if (cm == nullptr) {
        problems.push_back(
            fmt::format("spec.caBundle.configMapRef.name: ConfigMap '{}' not found", p->ca.name));
        if (reason.empty()) reason = "ConfigMapNotFound";
      } else if (auto v = crd::ConfigMapValue(*cm, p->ca.key); !v.ok()) {
        problems.push_back(fmt::format("spec.caBundle.configMapRef.key: {}", v.status().message()));
        if (reason.empty()) reason = "ConfigMapKeyNotFound";
      }
    }
    Propose(actions, k8s::kInferenceProviders, *obj, {Accepted(), RefsCondition(problems, reason)},
            now);
  }
}

void ReconcileTenants(const Snapshot& snap, const std::string& now, Actions& actions) {
  if (snap.tenants == nullptr) return;
  for (const auto& [key, obj] : snap.tenants->items()) {
    auto t = crd::TenantFromObject(*obj);
    if (!t.ok()) {
      Propose(actions, k8s::kInferenceTenants, *obj, {Invalid(t.status().message())}, now);
      continue;
    }
    std::vector<std::string> problems;
    std::string reason;
    int keys = 0;
    for (size_t i = 0; i < t->api_keys.size(); ++i) {
      CheckSecretRef(snap, t->ns, t->api_keys[i], fmt::format("spec.apiKeys[{}].secretRef", i),
                     problems, reason, &keys);
    }
    Propose(actions, k8s::kInferenceTenants, *obj, {Accepted(), RefsCondition(problems, reason)},
            now, json::object{{"apiKeys", keys}});
  }
}

}  // namespace

Actions Reconcile(const Snapshot& snapshot, const std::string& now, int revision_history_limit) {
  Actions actions;
  ReconcilePolicies(snapshot, now, revision_history_limit, actions);
  ReconcileProviders(snapshot, now, actions);
  ReconcileTenants(snapshot, now, actions);
  return actions;
}

}  // namespace kinference::controller
