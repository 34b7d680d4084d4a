#include "policy/decision_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <set>

namespace kinference::policy {

DecisionRecord RoutedRecord(const Evaluation& ev, const RequestInfo& req, Seconds at,
                            std::string request_id, std::string endpoint, double predicted_ttft_s) {
  DecisionRecord r;
  r.at = at;
  r.request_id = std::move(request_id);
  r.tenant = req.tenant;
  r.model = req.model;
  r.chosen_model = ev.chosen_model;
  r.generation = ev.generation;
  r.matched = ev.matched;
  r.outcome = "routed";
  r.endpoint = std::move(endpoint);
  r.predicted_ttft_s = predicted_ttft_s;
  r.removed = ev.removed;
  r.dry_run = ev.dry_run;
  return r;
}

DecisionRecord RejectedRecord(const Status& rejection, const RequestInfo& req, uint64_t generation,
                              Seconds at, std::string request_id,
                              std::vector<std::string> matched) {
  DecisionRecord r;
  r.at = at;
  r.request_id = std::move(request_id);
  r.tenant = req.tenant;
  r.model = req.model;
  r.generation = generation;
  r.outcome = "rejected";
  r.message = rejection.message();
  r.matched = std::move(matched);
  r.rejected_by = RejectingPolicy(rejection);
  if (!r.rejected_by.empty() &&
      std::find(r.matched.begin(), r.matched.end(), r.rejected_by) == r.matched.end())
    r.matched.push_back(r.rejected_by);
  return r;
}

std::string DecisionHeaderValue(const DecisionRecord& r) {
  std::string v =
      fmt::format("generation={}; policies={}", r.generation,
                  r.matched.empty() ? "-" : fmt::format("{}", fmt::join(r.matched, ",")));
  if (r.outcome == "rejected") return v + "; outcome=rejected";
  if (r.chosen_model != r.model) v += "; model=" + r.chosen_model;
  v += "; endpoint=" + r.endpoint;
  if (r.predicted_ttft_s) v += fmt::format("; predicted_ttft_s={:.3f}", *r.predicted_ttft_s);
  return v;
}

std::string RejectingPolicy(const Status& rejection) {
  const std::string& m = rejection.message();
  constexpr std::string_view kPrefix = "policy '";
  size_t b = m.find(kPrefix);
  if (b == std::string::npos) return "";
  b += kPrefix.size();
  size_t e = m.find('\'', b);
  return e == std::string::npos ? "" : m.substr(b, e - b);
}

void DecisionLog::Add(DecisionRecord record) {
  std::lock_guard lock(mu_);
  ring_.push_back(std::move(record));
  while (ring_.size() > capacity_) ring_.pop_front();
}

std::vector<DecisionRecord> DecisionLog::Snapshot() const {
  std::lock_guard lock(mu_);
  return {ring_.begin(), ring_.end()};
}

namespace {

boost::json::array Strings(const std::vector<std::string>& v) {
  boost::json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

boost::json::array Removals(const std::vector<Removal>& v) {
  boost::json::array a;
  for (const auto& r : v) {
    a.push_back(
        boost::json::object{{"endpoint", r.endpoint}, {"policy", r.policy}, {"reason", r.reason}});
  }
  return a;
}

boost::json::array Alternatives(const std::vector<Alternative>& v) {
  boost::json::array a;
  for (const auto& x : v) {
    a.push_back(boost::json::object{{"model", x.model}, {"tolerance_s", x.tolerance_s}});
  }
  return a;
}

}  // namespace

std::string DecisionLog::ToJson(const std::function<bool(const DecisionRecord&)>& keep) const {
  boost::json::array decisions;
  for (const auto& r : Snapshot()) {
    if (keep && !keep(r)) continue;
    boost::json::object o{{"at", r.at},
                          {"request_id", r.request_id},
                          {"tenant", r.tenant},
                          {"model", r.model},
                          {"chosen_model", r.chosen_model},
                          {"generation", r.generation},
                          {"matched", Strings(r.matched)},
                          {"outcome", r.outcome},
                          {"endpoint", r.endpoint},
                          {"message", r.message},
                          {"rejected_by", r.rejected_by},
                          {"removed", Removals(r.removed)}};
    if (r.predicted_ttft_s) o["predicted_ttft_s"] = *r.predicted_ttft_s;
    boost::json::array dry;
    for (const auto& d : r.dry_run) {
      dry.push_back(
          boost::json::object{{"policy", d.policy},
                              {"would_remove", Removals(d.would_remove)},
                              {"would_add_alternatives", Alternatives(d.would_add_alternatives)},
                              {"would_reject", d.would_reject}});
    }
    o["dry_run"] = std::move(dry);
    decisions.push_back(std::move(o));
  }
  return boost::json::serialize(boost::json::object{{"decisions", std::move(decisions)}});
}

void PolicyCounters::Record(const DecisionRecord& r) {
  std::lock_guard lock(mu_);
  for (const auto& p : std::set<std::string>(r.matched.begin(), r.matched.end()))
    ++counts_[{p, "matched"}];
  if (r.outcome == "rejected") {
    if (!r.rejected_by.empty()) ++counts_[{r.rejected_by, "rejected"}];
    return;
  }
  std::set<std::string> removing;
  for (const auto& rm : r.removed) removing.insert(rm.policy);
  for (const auto& p : removing) ++counts_[{p, "removed"}];
  for (const auto& d : r.dry_run) {
    if (d.would_reject) ++counts_[{d.policy, "dry_run_would_reject"}];
  }
}

std::map<std::pair<std::string, std::string>, uint64_t> PolicyCounters::Snapshot() const {
  std::lock_guard lock(mu_);
  return counts_;
}

}  // namespace kinference::policy
