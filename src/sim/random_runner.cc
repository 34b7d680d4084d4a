// RunRandom, TabulateRandom and FormatRandomTable of sim/random_scenario.h.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <thread>

#include "sim/random_scenario.h"
#include "sim/scenarios.h"
#include "workload/report.h"

namespace kinference::sim {
namespace {

constexpr const char* kFigureNames[] = {"ttft_p50", "ttft_p90", "e2e_p90"};

double Figure(const RandomFigures& f, size_t i) {
  return i == 0 ? f.ttft_p50_s : i == 1 ? f.ttft_p90_s : f.e2e_p90_s;
}

boost::json::value Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

RandomFigures FiguresOf(const SimResult& r, bool bound) {
  std::vector<double> ttft, e2e;
  RandomFigures f;
  for (const SimRequest& q : r.requests) {
    ++f.requests;
    if (!q.record.ok()) {
      ++f.errors;
      continue;
    }
    const double t = bound ? q.bound_ttft_s : q.record.ttft_s;
    const double e = bound ? q.bound_e2e_s : q.record.e2e_s;
    if (t >= 0) ttft.push_back(t);
    if (e >= 0) e2e.push_back(e);
  }
  f.ttft_p50_s = workload::Percentile(ttft, 0.5);
  f.ttft_p90_s = workload::Percentile(ttft, 0.9);
  f.e2e_p90_s = workload::Percentile(std::move(e2e), 0.9);
  return f;
}

}  // namespace

boost::json::object TabulateRandom(const std::vector<std::string>& strategies,
                                   const std::vector<RandomOutcome>& outcomes,
                                   const std::vector<std::string>& references) {
  const size_t n = strategies.size();
  std::vector<std::array<size_t, 4>> within(n, {0, 0, 0, 0});
  std::vector<double> worst(n, 0);
  std::vector<std::string> worst_figure(n), worst_line(n);
  auto is_reference = [&](size_t s) {
    return std::find(references.begin(), references.end(), strategies[s]) != references.end();
  };
  for (const RandomOutcome& o : outcomes) {
    std::array<double, 3> best;
    for (size_t i = 0; i < 3; ++i) {
      best[i] = INFINITY;
      for (size_t s = 0; s < n && s < o.figures.size(); ++s) {
        const double v = Figure(o.figures[s], i);
        if (!is_reference(s) && std::isfinite(v)) best[i] = std::min(best[i], v);
      }
    }
    for (size_t s = 0; s < n && s < o.figures.size(); ++s) {
      bool all = true;
      for (size_t i = 0; i < 3; ++i) {
        const double v = Figure(o.figures[s], i);
        // A figure the best strategy has and this one lacks (no request succeeded) is
        // infinitely worse; one nobody has is a tie.
        double ratio = !std::isfinite(best[i]) ? 1.0
                       : !std::isfinite(v)     ? INFINITY
                       : best[i] > 0           ? v / best[i]
                                               : (v > 0 ? INFINITY : 1.0);
        const bool ok = ratio <= 1 + kRandomTolerance;
        within[s][i] += ok ? 1 : 0;
        all = all && ok;
        if (ratio > worst[s]) {
          worst[s] = ratio;
          worst_figure[s] = kFigureNames[i];
          worst_line[s] = o.line;
        }
      }
      within[s][3] += all ? 1 : 0;
    }
  }
  boost::json::array rows;
  const double total = static_cast<double>(std::max<size_t>(1, outcomes.size()));
  for (size_t s = 0; s < n; ++s) {
    rows.push_back(boost::json::object{{"strategy", strategies[s]},
                                       {"within_ttft_p50", within[s][0] / total},
                                       {"within_ttft_p90", within[s][1] / total},
                                       {"within_e2e_p90", within[s][2] / total},
                                       {"within_all", within[s][3] / total},
                                       {"worst_ratio", Num(worst[s])},
                                       {"worst_figure", worst_figure[s]},
                                       {"worst_line", worst_line[s]}});
  }
  return boost::json::object{{"strategies", std::move(rows)}, {"scenarios", outcomes.size()}};
}

std::string FormatRandomTable(const boost::json::object& table) {
  std::string out = fmt::format(
      "{} scenarios; share within {:.0f}% of the best (oracle, bound: references)\n"
      "| strategy | TTFT p50 | TTFT p90 | e2e p90 | all three | worst ratio | worst figure, "
      "scenario |\n|---|---|---|---|---|---|---|\n",
      table.at("scenarios").to_number<size_t>(), kRandomTolerance * 100);
  for (const auto& v : table.at("strategies").as_array()) {
    const auto& r = v.as_object();
    auto pct = [&](const char* k) { return 100 * r.at(k).to_number<double>(); };
    const auto& worst = r.at("worst_ratio");
    out += fmt::format(
        "| {} | {:.0f}% | {:.0f}% | {:.0f}% | {:.0f}% | {} | {}, {} |\n",
        r.at("strategy").as_string().c_str(), pct("within_ttft_p50"), pct("within_ttft_p90"),
        pct("within_e2e_p90"), pct("within_all"),
        worst.is_null() ? std::string("inf") : fmt::format("{:.2f}", worst.to_number<double>()),
        r.at("worst_figure").as_string().c_str(), r.at("worst_line").as_string().c_str());
  }
  return out;
}

Result<boost::json::object> RunRandom(const RandomPlan& plan) {
  const auto wall0 = std::chrono::steady_clock::now();
  const size_t count = std::max<size_t>(1, plan.count);
  const size_t strategies = plan.strategies.size();
  // Scenarios are drawn lazily by the first job that needs one, kept while any of its
  // strategies has yet to run, and dropped after (memory: the scenarios in flight).
  struct Slot {
    std::once_flag drawn;
    std::optional<RandomScenario> scenario;
    std::optional<workload::SessionSource> source;
    std::atomic<size_t> left{0};
  };
  std::vector<Slot> slots(count);
  for (auto& s : slots) s.left = strategies;
  std::vector<std::string> lines(count);
  std::vector<boost::json::array> families(count);
  std::vector<std::vector<std::optional<Result<SimResult>>>> runs(count);
  std::vector<std::vector<RandomFigures>> figures(count,
                                                  std::vector<RandomFigures>(strategies + 1));
  for (auto& r : runs) r.resize(strategies);
  std::atomic<size_t> next{0};
  std::mutex mu;
  size_t done = 0, simulated = 0;
  std::optional<Status> failed;
  const size_t total = count * strategies;
  auto worker = [&] {
    for (size_t j = next++; j < total; j = next++) {
      const size_t c = j / strategies, s = j % strategies;
      Slot& slot = slots[c];
      std::call_once(slot.drawn, [&] {
        slot.scenario = DrawRandomScenario(plan.seed + c);
        slot.source = workload::SessionSource::FromSessions(slot.scenario->sessions);
        lines[c] = slot.scenario->line;
        for (const auto& [axis, family] : slot.scenario->families)
          families[c].push_back(boost::json::array{axis.c_str(), family.c_str()});
      });
      SimOptions o = slot.scenario->options;
      o.strategy = plan.strategies[s];
      o.seed = plan.seed + c;
      o.lower_bound = s == 0;
      o.strategy_options =
          plan.strategy_options;  // the bound depends on the requests only: once per scenario
      if (plan.native_scrape_intervals)
        o.scrape_interval_s = NativeScrapeIntervalS(o.strategy, o.scrape_interval_s);
      auto r = Simulate(*slot.source, o);
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!r.ok()) {
          if (!failed) failed = r.status();
        } else {
          figures[c][s] = FiguresOf(*r, false);
          if (s == 0) figures[c][strategies] = FiguresOf(*r, true);
          simulated += r->requests.size();
        }
        ++done;
        if (plan.on_progress) plan.on_progress(done, total);
      }
      if (--slot.left == 0) {
        slot.source.reset();
        slot.scenario.reset();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < std::max<size_t>(1, plan.jobs); ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (failed) return *failed;

  std::vector<std::string> columns = plan.strategies;
  columns.push_back("bound");
  std::vector<RandomOutcome> outcomes;
  boost::json::array scenarios;
  for (size_t c = 0; c < count; ++c) {
    outcomes.push_back(RandomOutcome{lines[c], figures[c]});
    boost::json::object results;
    for (size_t s = 0; s < columns.size(); ++s) {
      const RandomFigures& f = figures[c][s];
      results[columns[s]] = boost::json::object{{"ttft_p50_s", Num(f.ttft_p50_s)},
                                                {"ttft_p90_s", Num(f.ttft_p90_s)},
                                                {"e2e_p90_s", Num(f.e2e_p90_s)},
                                                {"requests", f.requests},
                                                {"errors", f.errors}};
    }
    scenarios.push_back(boost::json::object{{"seed", plan.seed + c},
                                            {"line", lines[c]},
                                            {"families", std::move(families[c])},
                                            {"results", std::move(results)}});
  }
  boost::json::object doc;
  doc["scenario"] = "random";
  doc["seed"] = plan.seed;
  doc["count"] = count;
  doc["table"] = TabulateRandom(columns, outcomes, {"oracle", "bound"});
  doc["scenarios"] = std::move(scenarios);
  doc["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  doc["simulated_requests"] = simulated;
  return doc;
}

}  // namespace kinference::sim
