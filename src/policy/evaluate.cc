#include "policy/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace kinference::policy {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Why `sel` selects `c` (empty when it does not).
std::string Selects(const Selector& sel, const Candidate& c) {
  for (auto cls : sel.classes) {
    if (cls == c.cls) return fmt::format("class {}", ToString(cls));
  }
  if (c.cls == EndpointClass::kLocal && Has(sel.pools, c.pool)) return "pool " + c.pool;
  if (c.cls == EndpointClass::kProvider && Has(sel.providers, c.provider)) {
    return "provider " + c.provider;
  }
  return "";
}

// Reason `c` violates `w` (empty when it satisfies it).
std::string Violates(const StatePredicates& w, const Candidate& c) {
  if (w.max_queue_depth && c.queue_depth && *c.queue_depth > *w.max_queue_depth) {
    return fmt::format("queue depth {} > maxQueueDepth {}", *c.queue_depth, *w.max_queue_depth);
  }
  if (w.max_kv_cache_usage && c.kv_cache_usage && *c.kv_cache_usage > *w.max_kv_cache_usage) {
    return fmt::format("KV cache usage {:.2f} > maxKvCacheUsage {}", *c.kv_cache_usage,
                       *w.max_kv_cache_usage);
  }
  if (w.max_predicted_ttft_s && c.predicted_ttft_s > *w.max_predicted_ttft_s) {
    return fmt::format("predicted TTFT {:.3f}s > maxPredictedTtftSeconds {}", c.predicted_ttft_s,
                       *w.max_predicted_ttft_s);
  }
  if (w.max_metrics_age_s && c.cls == EndpointClass::kLocal) {
    if (c.metrics_age_s < 0) return "never scraped (maxMetricsAgeSeconds)";
    if (c.metrics_age_s > *w.max_metrics_age_s) {
      return fmt::format("metrics age {:.1f}s > maxMetricsAgeSeconds {}", c.metrics_age_s,
                         *w.max_metrics_age_s);
    }
  }
  return "";
}

// Applies one policy's constraints to `set`; returns the removals (set is narrowed).
std::vector<Removal> Apply(const Policy& p, std::vector<Candidate>& set) {
  std::vector<Removal> removed;
  std::vector<Candidate> kept;
  const auto& c = p.constraints;
  for (auto& cand : set) {
    std::string why;
    if (c.include && Selects(*c.include, cand).empty()) {
      why = "not included by spec.constraints.include";
    } else if (auto s = Selects(c.exclude, cand); !s.empty()) {
      why = "excluded by " + s;
    } else {
      why = Violates(c.when, cand);
    }
    if (why.empty()) {
      kept.push_back(std::move(cand));
    } else {
      removed.push_back({cand.endpoint, p.name, why});
    }
  }
  if (!c.prefer.empty()) {
    bool any = std::any_of(kept.begin(), kept.end(),
                           [&](const Candidate& k) { return !Selects(c.prefer, k).empty(); });
    if (any) {
      std::vector<Candidate> preferred;
      for (auto& k : kept) {
        if (Selects(c.prefer, k).empty()) {
          removed.push_back(
              {k.endpoint, p.name, "not preferred while preferred candidates remain"});
        } else {
          preferred.push_back(std::move(k));
        }
      }
      kept = std::move(preferred);
    }
  }
  set = std::move(kept);
  return removed;
}

bool AnyFor(const std::vector<Candidate>& set, const std::string& model) {
  return std::any_of(set.begin(), set.end(), [&](const Candidate& c) { return c.model == model; });
}

double BestTtft(const std::vector<Candidate>& set, const std::string& model) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& c : set) {
    if (c.model == model) best = std::min(best, c.predicted_ttft_s);
  }
  return best;
}

}  // namespace

std::vector<Candidate> Evaluation::ForChosenModel() const {
  std::vector<Candidate> out;
  for (const auto& c : remaining) {
    if (c.model == chosen_model) out.push_back(c);
  }
  return out;
}

bool Matches(const Policy& p, const RequestInfo& req) {
  const auto& m = p.match;
  if (!m.tenants.empty() && !Has(m.tenants, req.tenant)) return false;
  if (!m.models.empty() && !Has(m.models, req.model)) return false;
  // Content the taggers could not read may carry any tag (onUnscannableContent).
  bool assume_tagged = !req.unscannable.empty() && !m.tags.empty() &&
                       p.on_unscannable_content == OnUnscannableContent::kTreatAsTagged;
  auto tagged = [&](const std::string& t) { return assume_tagged || Has(req.tags, t); };
  if (!m.tags.any_of.empty() && std::none_of(m.tags.any_of.begin(), m.tags.any_of.end(), tagged)) {
    return false;
  }
  for (const auto& t : m.tags.all_of) {
    if (!tagged(t)) return false;
  }
  for (const auto& t : m.tags.none_of) {
    if (tagged(t)) return false;
  }
  const auto& f = m.features;
  if (f.min_prompt_tokens && req.prompt_tokens < *f.min_prompt_tokens) return false;
  if (f.max_prompt_tokens && req.prompt_tokens > *f.max_prompt_tokens) return false;
  if (f.tools_present && req.tools_present != *f.tools_present) return false;
  if (f.stream && req.stream != *f.stream) return false;
  return true;
}

std::vector<std::string> MatchingPolicies(const PolicySet& set, const RequestInfo& req) {
  std::vector<std::string> out;
  for (const auto& p : set.policies) {
    if (Matches(p, req)) out.push_back(p.name);
  }
  return out;
}

Result<Evaluation> Evaluate(const PolicySet& set, const RequestInfo& req,
                            std::span<const Candidate> candidates) {
  Evaluation ev;
  ev.generation = set.generation;
  ev.chosen_model = req.model;

  std::vector<const Policy*> matched;
  for (const auto& p : set.policies) {
    bool tag_failure = !req.failed_taggers.empty() && !p.match.tags.empty();
    if (tag_failure && p.on_tagger_failure == OnTaggerFailure::kReject) {
      // Fail closed: without the tags we cannot tell whether the policy applies.
      if (p.mode == Mode::kEnforce) {
        return Status(ErrorCode::kUnavailable,
                      fmt::format("request rejected by policy '{}': tagger '{}' failed "
                                  "(onTaggerFailure: reject)",
                                  p.name, req.failed_taggers.front()));
      }
      ev.matched.push_back(p.name);
      ev.dry_run.push_back({p.name, {}, {}, true});
      continue;
    }
    if (Matches(p, req)) {
      matched.push_back(&p);
      ev.matched.push_back(p.name);
      if (p.mode == Mode::kEnforce && p.request_priority && !ev.request_priority) {
        ev.request_priority = p.request_priority;
      }
    }
  }

  // The models considered: requested plus enforce alternatives (first listing wins).
  for (const Policy* p : matched) {
    if (p->mode != Mode::kEnforce) continue;
    for (const auto& a : p->alternatives) {
      bool dup = a.model == req.model ||
                 std::any_of(ev.alternatives.begin(), ev.alternatives.end(),
                             [&](const Alternative& x) { return x.model == a.model; });
      if (!dup) ev.alternatives.push_back(a);
    }
  }
  auto considered = [&](const std::string& model) {
    return model == req.model ||
           std::any_of(ev.alternatives.begin(), ev.alternatives.end(),
                       [&](const Alternative& a) { return a.model == model; });
  };
  std::vector<Candidate> current;
  for (const auto& c : candidates) {
    if (considered(c.model)) current.push_back(c);
  }
  if (current.empty()) return ev;  // nothing to route to: not a policy decision

  for (const Policy* p : matched) {
    if (p->mode == Mode::kDryRun) {
      std::vector<Candidate> copy = current;
      DryRunEffect eff{p->name, Apply(*p, copy), {}, false};
      for (const auto& a : p->alternatives) {
        if (!considered(a.model)) eff.would_add_alternatives.push_back(a);
      }
      eff.would_reject = copy.empty() && eff.would_add_alternatives.empty();
      ev.dry_run.push_back(std::move(eff));
      continue;
    }
    auto removed = Apply(*p, current);
    ev.removed.insert(ev.removed.end(), removed.begin(), removed.end());
    if (current.empty()) {
      std::string detail;
      for (size_t i = 0; i < ev.removed.size() && i < 4; ++i) {
        detail +=
            fmt::format("{}{}: {}", i ? "; " : "", ev.removed[i].endpoint, ev.removed[i].reason);
      }
      if (ev.removed.size() > 4) detail += fmt::format("; and {} more", ev.removed.size() - 4);
      return Status(ErrorCode::kPermissionDenied,
                    fmt::format("request rejected by policy '{}': no eligible endpoint remains "
                                "({})",
                                p->name, detail));
    }
  }
  ev.remaining = std::move(current);

  // Model choice (see header).
  double r = BestTtft(ev.remaining, req.model);
  double best_alt = std::numeric_limits<double>::infinity();
  for (const auto& a : ev.alternatives) {
    if (!AnyFor(ev.remaining, a.model)) continue;
    double t = BestTtft(ev.remaining, a.model);
    bool wins = t < r || (a.tolerance_s > 0 && t <= r + a.tolerance_s);
    if (wins && t < best_alt) {
      best_alt = t;
      ev.chosen_model = a.model;
    }
  }
  return ev;
}

}  // namespace kinference::policy
