#include "crd/status.h"

#include <boost/json/serialize.hpp>

#include "k8s/resource.h"

namespace kinference::crd {
namespace json = boost::json;

namespace {
const json::array* ConditionsOf(const json::object& obj) {
  const json::value* v = k8s::Find(obj, {"status", "conditions"});
  return v == nullptr ? nullptr : v->if_array();
}

const json::object* ConditionIn(const json::array* conds, std::string_view type) {
  if (conds == nullptr) return nullptr;
  for (const auto& c : *conds) {
    if (c.is_object() && k8s::StringAt(c.as_object(), {"type"}) == type) return &c.as_object();
  }
  return nullptr;
}
}  // namespace

json::object BuildStatus(const json::object& obj, const std::vector<Condition>& conditions,
                         const std::string& now, const json::object& extra) {
  const int64_t generation = k8s::GenerationOf(obj);
  const json::array* current = ConditionsOf(obj);
  json::array out;
  // Conditions of other types (written by someone else) stay.
  if (current != nullptr) {
    for (const auto& c : *current) {
      if (!c.is_object()) continue;
      std::string_view type = k8s::StringAt(c.as_object(), {"type"});
      bool ours = false;
      for (const auto& n : conditions) ours = ours || n.type == type;
      if (!ours) out.push_back(c);
    }
  }
  for (const auto& n : conditions) {
    std::string status = n.status ? "True" : "False";
    std::string since = now;
    if (const json::object* old = ConditionIn(current, n.type)) {
      if (k8s::StringAt(*old, {"status"}) == status) {
        std::string_view t = k8s::StringAt(*old, {"lastTransitionTime"});
        if (!t.empty()) since = std::string(t);
      }
    }
    // metav1.Condition.message is at most 32768 bytes.
    std::string message = n.message.size() > 32000 ? n.message.substr(0, 32000) + "..." : n.message;
    out.push_back(json::object{{"type", n.type},
                               {"status", status},
                               {"reason", n.reason},
                               {"message", message},
                               {"observedGeneration", generation},
                               {"lastTransitionTime", since}});
  }
  json::object status{{"observedGeneration", generation}, {"conditions", std::move(out)}};
  for (const auto& kv : extra) status[kv.key()] = kv.value();
  return status;
}

bool StatusUnchanged(const json::object& obj, const json::object& status) {
  const json::object* current = k8s::ObjectAt(obj, {"status"});
  if (current == nullptr) return false;
  for (const auto& kv : status) {
    if (kv.key() == "conditions") continue;
    const json::value* have = current->if_contains(kv.key());
    if (have == nullptr || *have != kv.value()) return false;
  }
  const json::value* want = status.if_contains("conditions");
  if (want == nullptr || !want->is_array()) return true;
  const json::array* have = ConditionsOf(obj);
  for (const auto& c : want->as_array()) {
    const json::object& w = c.as_object();
    const json::object* h = ConditionIn(have, k8s::StringAt(w, {"type"}));
    if (h == nullptr) return false;
    for (const char* key : {"status", "reason", "message"}) {
      if (k8s::StringAt(*h, {key}) != k8s::StringAt(w, {key})) return false;
    }
    const json::value* hg = h->if_contains("observedGeneration");
    const json::value* wg = w.if_contains("observedGeneration");
    if (hg == nullptr || wg == nullptr || !hg->is_number() ||
        hg->to_number<int64_t>() != wg->to_number<int64_t>())
      return false;
  }
  return true;
}

std::string StatusPatch(const json::object& status) {
  return json::serialize(json::object{{"status", status}});
}

std::optional<Condition> FindCondition(const json::object& obj, const std::string& type) {
  const json::object* c = ConditionIn(ConditionsOf(obj), type);
  if (c == nullptr) return std::nullopt;
  return Condition{type, k8s::StringAt(*c, {"status"}) == "True",
                   std::string(k8s::StringAt(*c, {"reason"})),
                   std::string(k8s::StringAt(*c, {"message"}))};
}

}  // namespace kinference::crd
