// The multi-threaded runner and the summaries of sim/scenarios.h (the scenarios
// themselves: scenario_catalog.cc).
#include "sim/scenarios.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "engine/profile.h"
#include "routing/peers/peers.h"
#include "routing/strategy.h"
#include "workload/report.h"

namespace kinference::sim {
namespace {

double Mean(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

boost::json::value Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

}  // namespace

double NativeScrapeIntervalS(const std::string& strategy, double ours) {
  if (strategy == "gie" || strategy == "llmd-sticky")
    return routing::peers::kGieRefreshMetricsIntervalS;
  return ours;
}

std::vector<std::string> DefaultStrategies() {
  std::vector<std::string> out = {"random", "round-robin", "least-load", "prefix",
                                  "predicted-ttft"};
  for (const auto& n : routing::RegisteredStrategyNames())
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  out.push_back("oracle");
  return out;
}

boost::json::object Summarize(const std::string& scenario, const Condition& c,
                              const std::string& strategy, const std::vector<SimResult>& trials) {
  std::vector<workload::RequestRecord> records;
  std::vector<double> abs_err, rel_err, goodput, goodput_window;
  std::vector<double> bound_ttft, bound_e2e, waits;
  size_t rejected = 0, retried = 0;
  // Per trial (in seed order), for paired comparisons between strategies: every strategy
  // runs trial t on the same arrivals.
  boost::json::array ttft_p50_trials, ttft_p90_trials, e2e_p50_trials, e2e_p90_trials,
      itl_p90_trials;
  size_t met = 0, ok = 0;
  double duration = 0;
  for (const SimResult& t : trials) {
    size_t met_t = 0, sessions_t = 0;
    double first_start = kNever, last_end = 0, slot_s = 0;
    std::vector<double> ttft_t, e2e_t, itl_t;
    for (const SimRequest& r : t.requests) {
      if (r.session_index < c.warmup_sessions) continue;
      records.push_back(r.record);
      if (r.record.ok() && r.record.ttft_s >= 0) ttft_t.push_back(r.record.ttft_s);
      if (r.record.ok()) {
        e2e_t.push_back(r.record.e2e_s);
        itl_t.insert(itl_t.end(), r.record.itl_s.begin(), r.record.itl_s.end());
        waits.push_back(r.gateway_wait_s);
        if (r.bound_ttft_s >= 0) bound_ttft.push_back(r.bound_ttft_s);
        if (r.bound_e2e_s >= 0) bound_e2e.push_back(r.bound_e2e_s);
      } else if (r.record.error.starts_with("429") || r.record.error.starts_with("503")) {
        ++rejected;
      }
      if (r.retries > 0) ++retried;
      first_start = std::min(first_start, r.record.start_s);
      last_end = std::max(last_end, r.record.start_s + r.record.e2e_s);
      slot_s += r.think_s + r.record.e2e_s;
      if (r.record.turn == 0) ++sessions_t;
      if (!r.record.ok()) continue;
      ++ok;
      if (c.ttft_slo_s > 0 && r.record.ttft_s >= 0 && r.record.ttft_s <= c.ttft_slo_s) ++met_t;
      if (r.predicted_ttft_s >= 0 && r.gateway_ttft_s > 0) {
        double e = std::abs(r.predicted_ttft_s - r.gateway_ttft_s);
        abs_err.push_back(e);
        rel_err.push_back(e / r.gateway_ttft_s);
      }
    }
    ttft_p50_trials.push_back(Num(workload::Percentile(ttft_t, 0.5)));
    ttft_p90_trials.push_back(Num(workload::Percentile(ttft_t, 0.9)));
    e2e_p50_trials.push_back(Num(workload::Percentile(e2e_t, 0.5)));
    e2e_p90_trials.push_back(Num(workload::Percentile(e2e_t, 0.9)));
    itl_p90_trials.push_back(Num(workload::Percentile(std::move(itl_t), 0.9)));
    met += met_t;
    const double window = c.warmup_sessions > 0 ? last_end - first_start : t.duration_s;
    duration += window;
    if (window > 0) goodput_window.push_back(static_cast<double>(met_t) / (window / 60.0));
    // Steady state (Little's law): a full closed loop of c slots, each cycling through
    // think time + e2e, completes c / mean(think + e2e) requests per second.
    const double slots = static_cast<double>(std::min(c.options.concurrency, sessions_t));
    if (slot_s > 0 && slots > 0) goodput.push_back(60.0 * slots * met_t / slot_s);
  }
  workload::RunInfo info;
  info.workload = c.workload;
  info.strategy = strategy;
  info.label = c.label;
  info.target = "simulate";
  info.duration_s = duration;
  workload::Summary s = workload::Summarize(records, info);

  // The bench summary's fields (workload/report.h), plus the scenario's own.
  boost::json::object o = workload::SummaryJson(s);
  o["scenario"] = scenario;
  o["trials"] = trials.size();
  std::vector<double> ttfts;
  for (const auto& r : records)
    if (r.ok() && r.ttft_s >= 0) ttfts.push_back(r.ttft_s);
  boost::json::array quantiles;  // TTFT at 0%, 5%, ..., 100%: the CDF for plots
  if (!ttfts.empty())
    for (int i = 0; i <= 20; ++i) quantiles.push_back(workload::Percentile(ttfts, i / 20.0));
  o["ttft_quantiles_s"] = std::move(quantiles);
  o["ttft_p50_s_trials"] = std::move(ttft_p50_trials);
  o["ttft_p90_s_trials"] = std::move(ttft_p90_trials);
  o["e2e_p50_s_trials"] = std::move(e2e_p50_trials);
  o["e2e_p90_s_trials"] = std::move(e2e_p90_trials);
  o["itl_p90_s_trials"] = std::move(itl_p90_trials);
  // The lower bound on the same requests (sim/bound.h) and what the gateway did.
  o["bound_ttft_p50_s"] = Num(workload::Percentile(bound_ttft, 0.5));
  o["bound_ttft_p90_s"] = Num(workload::Percentile(bound_ttft, 0.9));
  o["bound_e2e_p50_s"] = Num(workload::Percentile(bound_e2e, 0.5));
  o["bound_e2e_p90_s"] = Num(workload::Percentile(bound_e2e, 0.9));
  o["gateway_wait_p90_s"] = Num(workload::Percentile(waits, 0.9));
  o["rejected"] = rejected;
  o["retried"] = retried;
  o["routers"] = c.options.routers;
  o["prediction_abs_err_p50_s"] = Num(workload::Percentile(abs_err, 0.5));
  o["prediction_rel_err_p90"] = Num(workload::Percentile(rel_err, 0.9));
  if (c.options.kv_events) {
    // Share of routed requests matched with the precise index (the rest: a replica's
    // feed was down, as after a restart, and the approximate index stood in).
    size_t routed = 0, precise = 0;
    for (const SimResult& t : trials)
      for (const SimRequest& r : t.requests) {
        if (r.session_index < c.warmup_sessions || r.record.endpoint.empty()) continue;
        ++routed;
        precise += r.precise ? 1 : 0;
      }
    o["kv_events"] = true;
    o["precise_fraction"] = routed ? static_cast<double>(precise) / routed : 0.0;
  }
  if (c.options.concurrency > 0) {
    o["concurrency"] = c.options.concurrency;
    if (c.ttft_slo_s > 0) {
      double frac = ok ? static_cast<double>(met) / static_cast<double>(s.requests) : 0.0;
      o["ttft_slo_s"] = c.ttft_slo_s;
      o["slo_fraction"] = frac;
      o["goodput_rpm"] = Num(Mean(goodput));
      boost::json::array per_trial;  // same order as the trials' seeds
      for (double g : goodput) per_trial.push_back(Num(g));
      o["goodput_rpm_trials"] = std::move(per_trial);
      o["goodput_window_rpm"] = Num(Mean(goodput_window));
      o["slo_met"] = frac >= kSloFraction;
    }
  } else if (c.spec.rate_rps > 0) {
    o["rate_rps"] = c.spec.rate_rps;
  }
  return o;
}

Result<boost::json::object> RunScenario(const Scenario& scenario, const RunPlan& plan) {
  const auto wall0 = std::chrono::steady_clock::now();
  size_t trials = std::max<size_t>(1, plan.trials);
  if (scenario.max_trials > 0) trials = std::min(trials, scenario.max_trials);
  // Workloads once per (condition, trial), shared read-only by every strategy; sessions
  // are generated as each run starts them (SessionSource).
  std::vector<std::vector<workload::SessionSource>> sessions(scenario.conditions.size());
  for (size_t c = 0; c < scenario.conditions.size(); ++c) {
    for (size_t t = 0; t < trials; ++t) {
      workload::WorkloadSpec spec = scenario.conditions[c].spec;
      spec.seed = plan.seed + t;
      spec.trace_offset += t * scenario.conditions[c].trace_offset_step;
      auto w = workload::MakeSessionSource(spec);
      if (!w.ok()) return w.status();
      sessions[c].push_back(std::move(*w));
    }
  }
  struct Job {
    size_t condition, strategy, trial;
  };
  std::vector<Job> jobs;
  auto included = [&](size_t c, size_t s) {
    const auto& of_scenario = scenario.strategies;
    if (!of_scenario.empty() &&
        std::find(of_scenario.begin(), of_scenario.end(), plan.strategies[s]) == of_scenario.end())
      return false;
    const auto& only = scenario.conditions[c].only_strategies;
    return only.empty() || std::find(only.begin(), only.end(), plan.strategies[s]) != only.end();
  };
  for (size_t c = 0; c < scenario.conditions.size(); ++c)
    for (size_t s = 0; s < plan.strategies.size(); ++s)
      if (included(c, s))
        for (size_t t = 0; t < trials; ++t) jobs.push_back({c, s, t});
  // Longest jobs first (requests per run), so the threads finish together.
  auto cost = [&](const Job& j) { return sessions[j.condition][j.trial].total_turns(); };
  std::stable_sort(jobs.begin(), jobs.end(),
                   [&](const Job& a, const Job& b) { return cost(a) > cost(b); });
  std::vector<std::optional<Result<SimResult>>> out(jobs.size());
  std::atomic<size_t> next{0};
  size_t total_requests = 0, done_requests = 0;
  for (const Job& j : jobs) total_requests += cost(j);
  std::mutex progress_mu;
  auto worker = [&] {
    for (size_t j = next++; j < jobs.size(); j = next++) {
      const Job& job = jobs[j];
      SimOptions o = scenario.conditions[job.condition].options;
      o.strategy = plan.strategies[job.strategy];
      o.seed = plan.seed + job.trial;
      if (plan.native_scrape_intervals)
        o.scrape_interval_s = NativeScrapeIntervalS(o.strategy, o.scrape_interval_s);
      out[j] = Simulate(sessions[job.condition][job.trial], o);
      if (plan.on_progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        done_requests += cost(job);
        plan.on_progress(done_requests, total_requests);
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < std::max<size_t>(1, plan.jobs); ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();

  boost::json::array results;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> errors;
  size_t simulated = 0;
  for (size_t c = 0; c < scenario.conditions.size(); ++c) {
    for (size_t s = 0; s < plan.strategies.size(); ++s) {
      if (!included(c, s)) continue;
      std::vector<SimResult> runs;
      size_t first_trial = 0;
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (jobs[j].condition != c || jobs[j].strategy != s) continue;
        if (!out[j]->ok()) return out[j]->status();
        if (jobs[j].trial == 0) first_trial = runs.size();
        runs.push_back(std::move(out[j]->value()));
      }
      if (plan.on_first_trial && !runs.empty())
        plan.on_first_trial(scenario.conditions[c], plan.strategies[s], runs[first_trial]);
      for (const auto& r : runs) {
        simulated += r.requests.size();
        for (const auto& q : r.requests) {
          if (!q.record.ok() || q.predicted_ttft_s < 0 || q.gateway_ttft_s <= 0) continue;
          double e = std::abs(q.predicted_ttft_s - q.gateway_ttft_s);
          errors[plan.strategies[s]].first.push_back(e);
          errors[plan.strategies[s]].second.push_back(e / q.gateway_ttft_s);
        }
      }
      results.push_back(Summarize(scenario.name, scenario.conditions[c], plan.strategies[s], runs));
    }
  }
  boost::json::object pred;
  for (auto& [name, e] : errors) {
    pred[name] = boost::json::object{{"abs_p50_s", Num(workload::Percentile(e.first, 0.5))},
                                     {"rel_p90", Num(workload::Percentile(e.second, 0.9))},
                                     {"samples", e.first.size()}};
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  boost::json::object doc;
  doc["scenario"] = scenario.name;
  doc["description"] = scenario.description;
  doc["trials"] = trials;
  doc["seed"] = plan.seed;
  doc["results"] = std::move(results);
  doc["prediction_error"] = std::move(pred);
  doc["wall_s"] = wall;
  doc["simulated_requests"] = simulated;
  doc["sim_requests_per_wall_s"] = wall > 0 ? static_cast<double>(simulated) / wall : 0.0;
  return doc;
}

}  // namespace kinference::sim
