#include "sim/cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "common/progress.h"
#include "engine/profile.h"
#include "routing/strategy.h"
#include "sim/random_scenario.h"
#include "sim/scenarios.h"
#include "workload/report.h"

namespace kinference::sim {
namespace {

struct CliOptions {
  std::string scenario = "all";
  std::string strategies;  // comma-separated; empty = DefaultStrategies()
  size_t trials = 3;
  uint64_t seed = 1;
  size_t count = 20;  // --scenario random: scenarios (seeds seed .. seed + count - 1)
  size_t jobs = 2;
  std::string out = "results/sim";
  std::string trace = "data/traces/mooncake_conversation_trace.jsonl";
  double scale = 1.0;
  double network_latency_s = kDefaultNetworkLatencyS;
  double scrape_interval_s = 1.0;
  double scrape_jitter_s = 0;
  double metrics_delay_s = 0;
  bool uniform_scrapes = false;  // every strategy at --scrape-interval (no native intervals)
  // Ad-hoc run (used when --workload is given).
  std::string workload;
  size_t replicas = 3;
  std::string profile = "l40s-27b-fp8";  // comma-separated: cycled over the replicas
  double rate = 0;
  size_t concurrency = 0;
  size_t requests = 48;  // sessions
  double slo_s = 0;
  double speed = 1.0;       // trace: arrival-time divisor
  size_t trace_offset = 0;  // trace: first line used
  // multiturn shape "SYSTEM,USER,OUTPUT,THINK[,TURNS]" (tokens, s); empty = defaults
  std::string multiturn;
  bool kv_events = false;  // ad-hoc: precise prefix index from the engines' KV events
  // shared-prefix shape "PREFIXES,PREFIX_TOKENS[,SUFFIX_TOKENS,OUTPUT_TOKENS]"
  std::string shared_prefix;
  std::string burst;  // "SIZE,INTERVAL_S[,SPREAD_S]"
  size_t routers = 1;
  bool split_by_session = false;
  bool same_router_seed = false;
  size_t admission_awaiting = 0;
  bool no_cached_tokens = false;
  bool quiet = false;
  // Score-term weights "TERM=W,..." (routing/strategy.h kPredictedTtftTerms), every run.
  std::string strategy_options;
  std::string records;  // non-empty: per-request JSONL of each run's first trial under it
};

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// A condition label as a file-name part: characters other than [A-Za-z0-9._=-] become '_'.
std::string FileNamePart(const std::string& s) {
  std::string out = s;
  for (char& ch : out) {
    bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' ||
                ch == '=' || ch == '-';
    if (!keep) ch = '_';
  }
  return out;
}

// Writes `trial`'s client-side records, one JSON object a line (bench's RecordJson shape:
// start_s, ttft_s, e2e_s, endpoint, ...), to DIR/<scenario>/<workload>_<label>_<strategy>.jsonl.
Status WriteRecords(const std::string& dir, const std::string& scenario, const Condition& c,
                    const std::string& strategy, const SimResult& trial) {
  std::filesystem::path folder = std::filesystem::path(dir) / scenario;
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  std::string name = FileNamePart(c.workload + "_" + c.label + "_" + strategy) + ".jsonl";
  std::ofstream f(folder / name, std::ios::trunc);
  for (const auto& r : trial.requests)
    f << boost::json::serialize(workload::RecordJson(r.record)) << "\n";
  if (!f) return Status(ErrorCode::kInternal, "cannot write " + (folder / name).string());
  return Status::Ok();
}

// Comma-separated non-negative numbers, between `min` and `max` of them.
Result<std::vector<double>> Numbers(const std::string& list, size_t min, size_t max,
                                    const std::string& usage) {
  auto f = SplitList(list);
  if (f.size() < min || f.size() > max) return Status(ErrorCode::kInvalidArgument, usage);
  std::vector<double> v;
  for (const auto& x : f) {
    char* end = nullptr;
    double d = std::strtod(x.c_str(), &end);
    if (end == x.c_str() || *end != '\0' || !(d >= 0))
      return Status(ErrorCode::kInvalidArgument, usage + ": bad number '" + x + "'");
    v.push_back(d);
  }
  return v;
}

Result<Scenario> AdHocScenario(const CliOptions& o, const ScenarioParams& params) {
  std::vector<ReplicaSpec> replicas;
  auto profiles = SplitList(o.profile);
  if (profiles.empty()) return Status(ErrorCode::kInvalidArgument, "--profile is empty");
  for (size_t i = 0; i < o.replicas; ++i) {
    const std::string& name = profiles[i % profiles.size()];
    auto p = engine::ProfileByName(name);
    if (!p.ok()) return p.status();
    ReplicaSpec r;
    r.pool = name;
    r.id = fmt::format("{}/{}", name, i);
    r.profile = *p;
    replicas.push_back(std::move(r));
  }
  Condition c;
  c.workload = o.workload;
  c.label = o.concurrency ? fmt::format("c={}", o.concurrency)
            : o.rate > 0  ? fmt::format("rate={:g}", o.rate)
                          : fmt::format("speed={:g}", o.speed);
  c.spec.name = o.workload;
  c.spec.sessions = o.requests;
  c.spec.rate_rps = o.rate;
  c.spec.trace_path = o.trace;
  c.spec.speed = o.speed;
  c.spec.trace_offset = o.trace_offset;
  if (!o.multiturn.empty()) {
    auto f = SplitList(o.multiturn);
    if (f.size() < 4 || f.size() > 5)
      return Status(ErrorCode::kInvalidArgument,
                    "--multiturn wants SYSTEM,USER,OUTPUT,THINK[,TURNS]");
    std::vector<double> v;
    for (const auto& x : f) {
      char* end = nullptr;
      double d = std::strtod(x.c_str(), &end);
      if (end == x.c_str() || *end != '\0' || !(d >= 0))
        return Status(ErrorCode::kInvalidArgument, "--multiturn: bad number '" + x + "'");
      v.push_back(d);
    }
    workload::MultiturnShape& m = c.spec.multiturn;
    m.system_tokens = static_cast<size_t>(v[0]);
    m.user_tokens = static_cast<size_t>(v[1]);
    m.output_tokens = static_cast<int>(v[2]);
    m.think_time_s = v[3];
    if (v.size() == 5) m.turns = static_cast<size_t>(v[4]);
  }
  if (!o.shared_prefix.empty()) {
    auto v =
        Numbers(o.shared_prefix, 2, 4, "--shared-prefix wants PREFIXES,TOKENS[,SUFFIX,OUTPUT]");
    if (!v.ok()) return v.status();
    workload::SharedPrefixShape& sp = c.spec.shared_prefix;
    sp.prefixes = static_cast<size_t>((*v)[0]);
    sp.prefix_tokens = static_cast<size_t>((*v)[1]);
    if (v->size() == 4) {
      sp.suffix_tokens = static_cast<size_t>((*v)[2]);
      sp.output_tokens = static_cast<int>((*v)[3]);
    }
  }
  if (!o.burst.empty()) {
    auto v = Numbers(o.burst, 2, 3, "--burst wants SIZE,INTERVAL_S[,SPREAD_S]");
    if (!v.ok()) return v.status();
    c.spec.burst_size = static_cast<size_t>((*v)[0]);
    c.spec.burst_interval_s = (*v)[1];
    if (v->size() == 3) c.spec.burst_spread_s = (*v)[2];
    if (o.rate <= 0) c.label = fmt::format("burst={}", c.spec.burst_size);
  }
  c.options.replicas = std::move(replicas);
  c.options.concurrency = o.concurrency;
  c.options.network_latency_s = params.network_latency_s;
  c.options.scrape_interval_s = params.scrape_interval_s;
  c.options.scrape_jitter_s = params.scrape_jitter_s;
  c.options.metrics_delay_s = params.metrics_delay_s;
  c.options.routers = o.routers;
  c.options.split_by_session = o.split_by_session;
  c.options.same_router_seed = o.same_router_seed;
  c.options.admission.max_awaiting_per_endpoint = o.admission_awaiting;
  c.options.usage_cached_tokens = !o.no_cached_tokens;
  c.options.kv_events = o.kv_events;
  if (o.kv_events) c.label += ",kv-events";
  c.ttft_slo_s = o.slo_s;
  Scenario s{"custom", fmt::format("{} x {}", o.replicas, o.profile), {c}};
  return s;
}

// "TERM=W,..." with TERM one of kPredictedTtftTerms and W >= 0.
Result<std::map<std::string, double, std::less<>>> ParseStrategyOptions(const std::string& list) {
  std::map<std::string, double, std::less<>> out;
  for (const auto& item : SplitList(list)) {
    const size_t eq = item.find('=');
    const std::string term = item.substr(0, eq);
    const auto& terms = routing::kPredictedTtftTerms;
    if (eq == std::string::npos ||
        std::find(std::begin(terms), std::end(terms), term) == std::end(terms))
      return Status(ErrorCode::kInvalidArgument,
                    "--strategy-options wants TERM=WEIGHT,... with TERM one of extra_work, evict, "
                    "fill, decode; got '" +
                        item + "'");
    char* end = nullptr;
    const double w = std::strtod(item.c_str() + eq + 1, &end);
    if (end == item.c_str() + eq + 1 || *end != '\0' || !(w >= 0))
      return Status(ErrorCode::kInvalidArgument,
                    "--strategy-options: bad weight in '" + item + "'");
    out[term] = w;
  }
  return out;
}

// --scenario random: RunRandom over seeds seed .. seed + count - 1 (sim/random_scenario.h);
// prints each scenario's line with the best figures, then the table; writes random.json.
int RunRandomScenarios(const CliOptions& o) {
  RandomPlan plan;
  plan.strategies = o.strategies.empty() ? DefaultStrategies() : SplitList(o.strategies);
  plan.seed = o.seed;
  plan.count = o.count;
  plan.jobs = o.jobs;
  plan.native_scrape_intervals = !o.uniform_scrapes;
  auto weights = ParseStrategyOptions(o.strategy_options);
  if (!weights.ok()) {
    fmt::print(stderr, "simulate: {}\n", weights.status().message());
    return 2;
  }
  plan.strategy_options = *weights;
  ProgressLine progress(TerminalStderr(), "simulate random", "runs", 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  size_t done = 0;
  plan.on_progress = [&](size_t d, size_t total) {
    progress.set_total(total);
    progress.Update(done = d, elapsed());
  };
  auto doc = RunRandom(plan);
  progress.Finish(done, elapsed());
  if (!doc.ok()) {
    fmt::print(stderr, "simulate: random: {}\n", doc.status().message());
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  std::string path = (std::filesystem::path(o.out) / "random.json").string();
  std::ofstream f(path);
  f << boost::json::serialize(*doc) << "\n";
  if (!f) {
    fmt::print(stderr, "simulate: cannot write {}\n", path);
    return 1;
  }
  if (!o.quiet) {
    for (const auto& v : (*doc)["scenarios"].as_array()) {
      const auto& s = v.as_object();
      std::string figures;
      for (const auto& [name, r] : s.at("results").as_object()) {
        if (name == "predicted-ttft") {
          auto num = [&](const char* k) {
            const auto& x = r.as_object().at(k);
            return x.is_null() ? std::string("-") : fmt::format("{:.2f}", x.to_number<double>());
          };
          figures = fmt::format(" | predicted-ttft {}/{}/{} s", num("ttft_p50_s"),
                                num("ttft_p90_s"), num("e2e_p90_s"));
        }
      }
      fmt::print("{}{}\n", s.at("line").as_string().c_str(), figures);
    }
  }
  fmt::print("{}", FormatRandomTable((*doc)["table"].as_object()));
  fmt::print("random: {} simulated requests in {:.2f} s wall -> {}\n",
             (*doc)["simulated_requests"].to_number<size_t>(), (*doc)["wall_s"].to_number<double>(),
             path);
  return 0;
}

int Run(const CliOptions& o) {
  if (o.workload.empty() && o.scenario == "random") return RunRandomScenarios(o);
  ScenarioParams params;
  params.trace_path = o.trace;
  params.scale = o.scale;
  params.network_latency_s = o.network_latency_s;
  params.scrape_interval_s = o.scrape_interval_s;
  params.scrape_jitter_s = o.scrape_jitter_s;
  params.metrics_delay_s = o.metrics_delay_s;

  RunPlan plan;
  plan.native_scrape_intervals = !o.uniform_scrapes;
  plan.strategies = o.strategies.empty() ? DefaultStrategies() : SplitList(o.strategies);
  plan.trials = o.trials;
  plan.seed = o.seed;
  plan.jobs = o.jobs;

  std::vector<Scenario> scenarios;
  if (!o.workload.empty()) {
    auto s = AdHocScenario(o, params);
    if (!s.ok()) {
      fmt::print(stderr, "simulate: {}\n", s.status().message());
      return 2;
    }
    scenarios.push_back(std::move(*s));
  } else {
    auto names = o.scenario == "all" ? ScenarioNames() : SplitList(o.scenario);
    for (const auto& n : names) {
      auto s = MakeScenario(n, params);
      if (!s.ok()) {
        fmt::print(stderr, "simulate: {}\n", s.status().message());
        return 2;
      }
      scenarios.push_back(std::move(*s));
    }
  }
  auto weights = ParseStrategyOptions(o.strategy_options);
  if (!weights.ok()) {
    fmt::print(stderr, "simulate: {}\n", weights.status().message());
    return 2;
  }
  for (auto& s : scenarios)
    for (auto& c : s.conditions) c.options.strategy_options = *weights;
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  double total_wall = 0;
  size_t total_requests = 0;
  Status records_status = Status::Ok();
  for (const auto& s : scenarios) {
    ProgressLine progress(TerminalStderr(), "simulate " + s.name, "requests", 0);
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [t0] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    size_t done = 0;
    plan.on_progress = [&](size_t d, size_t total) {
      progress.set_total(total);
      progress.Update(done = d, elapsed());
    };
    if (!o.records.empty()) {
      plan.on_first_trial = [&](const Condition& c, const std::string& strategy,
                                const SimResult& trial) {
        Status st = WriteRecords(o.records, s.name, c, strategy, trial);
        if (!st.ok() && records_status.ok()) records_status = st;
      };
    }
    auto doc = RunScenario(s, plan);
    progress.Finish(done, elapsed());
    if (!records_status.ok()) {
      fmt::print(stderr, "simulate: {}\n", records_status.message());
      return 1;
    }
    if (!doc.ok()) {
      fmt::print(stderr, "simulate: {}: {}\n", s.name, doc.status().message());
      return 1;
    }
    std::string path = (std::filesystem::path(o.out) / (s.name + ".json")).string();
    std::ofstream f(path);
    f << boost::json::serialize(*doc) << "\n";
    if (!f) {
      fmt::print(stderr, "simulate: cannot write {}\n", path);
      return 1;
    }
    double wall = (*doc)["wall_s"].to_number<double>();
    size_t n = (*doc)["simulated_requests"].to_number<size_t>();
    total_wall += wall;
    total_requests += n;
    if (!o.quiet) {
      fmt::print("== {}: {}\n", s.name, s.description);
      fmt::print("{}", workload::FormatTable((*doc)["results"].as_array()));
    }
    fmt::print("{}: {} simulated requests in {:.2f} s wall ({:.0f} req/s) -> {}\n", s.name, n, wall,
               wall > 0 ? n / wall : 0.0, path);
  }
  fmt::print("total: {} simulated requests in {:.2f} s wall ({:.0f} req/s)\n", total_requests,
             total_wall, total_wall > 0 ? total_requests / total_wall : 0.0);
  return 0;
}

}  // namespace

void RegisterCommand(CLI::App& app) {
  auto opts = std::make_shared<CliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Virtual-time cluster simulation: engine models + the routing core");
  cmd->add_option("--scenario", opts->scenario,
                  "light-load, capacity, trace, heterogeneous, restarts, kv-events, large-prefix, "
                  "burst, overload, small-pool, routers, cost-shape (comma list) or all; or random "
                  "(--count scenarios drawn from seeds --seed.., sim/random_scenario.h)")
      ->capture_default_str();
  cmd->add_option("--strategies", opts->strategies,
                  "comma-separated strategies (default: every registered one + oracle)");
  cmd->add_option("--trials", opts->trials, "trials per condition")->capture_default_str();
  cmd->add_option("--count", opts->count, "--scenario random: scenarios (seeds --seed onwards)")
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "base seed (trial t uses seed + t)")->capture_default_str();
  cmd->add_option("--jobs", opts->jobs, "simulation threads")->capture_default_str();
  cmd->add_option("--out", opts->out, "output directory")->capture_default_str();
  cmd->add_option("--trace", opts->trace, "Mooncake trace (JSONL)")->capture_default_str();
  cmd->add_option("--scale", opts->scale, "multiplies every scenario's request count")
      ->capture_default_str();
  cmd->add_option("--network-latency", opts->network_latency_s, "one-way latency per hop, seconds")
      ->capture_default_str();
  cmd->add_option("--scrape-interval", opts->scrape_interval_s, "metrics scrape interval, s")
      ->capture_default_str();
  cmd->add_option("--scrape-jitter", opts->scrape_jitter_s, "+- uniform scrape jitter, s")
      ->capture_default_str();
  cmd->add_option("--metrics-delay", opts->metrics_delay_s,
                  "extra age of every scrape when a router gets it, s")
      ->capture_default_str();
  cmd->add_flag("--uniform-scrapes", opts->uniform_scrapes,
                "every strategy scrapes at --scrape-interval (default: gie and llmd-sticky at "
                "their endpoint picker's 50 ms)");
  cmd->add_option("--workload", opts->workload,
                  "ad-hoc run: shared-prefix, multiturn, independent or trace");
  cmd->add_option("--replicas", opts->replicas, "ad-hoc: replicas")->capture_default_str();
  cmd->add_option("--profile", opts->profile, "ad-hoc: profile(s), comma list cycled")
      ->capture_default_str();
  cmd->add_option("--rate", opts->rate, "ad-hoc: Poisson sessions/s (0: closed loop)");
  cmd->add_option("--concurrency", opts->concurrency, "ad-hoc: closed-loop concurrency");
  cmd->add_option("--requests", opts->requests, "ad-hoc: sessions")->capture_default_str();
  cmd->add_option("--speed", opts->speed, "ad-hoc trace: arrival times divided by this")
      ->capture_default_str();
  cmd->add_option("--trace-offset", opts->trace_offset, "ad-hoc trace: first trace line used")
      ->capture_default_str();
  cmd->add_option("--slo", opts->slo_s, "ad-hoc: TTFT threshold for goodput, s");
  cmd->add_option("--multiturn", opts->multiturn,
                  "ad-hoc multiturn shape SYSTEM,USER,OUTPUT,THINK[,TURNS] (tokens, s)");
  cmd->add_flag("--kv-events", opts->kv_events,
                "ad-hoc: route with the precise prefix index fed by the engines' KV events");
  cmd->add_option("--shared-prefix", opts->shared_prefix,
                  "ad-hoc shared-prefix shape PREFIXES,TOKENS[,SUFFIX,OUTPUT] (tokens)");
  cmd->add_option("--burst", opts->burst,
                  "ad-hoc arrivals in bursts SIZE,INTERVAL_S[,SPREAD_S] (instead of --rate)");
  cmd->add_option("--routers", opts->routers, "ad-hoc: gateway replicas (own router each)")
      ->capture_default_str();
  cmd->add_flag("--same-router-seed", opts->same_router_seed,
                "ad-hoc: every gateway replica's router breaks ties with the same seed");
  cmd->add_flag("--split-by-session", opts->split_by_session,
                "ad-hoc: a session keeps its gateway replica (default: each request at random)");
  cmd->add_option("--admission", opts->admission_awaiting,
                  "ad-hoc: queue at the gateway beyond this many requests per endpoint without "
                  "a first token (0: off)")
      ->capture_default_str();
  cmd->add_flag("--no-cached-token-details", opts->no_cached_tokens,
                "ad-hoc: usage without prompt_tokens_details (vLLM's default)");
  cmd->add_flag("--quiet", opts->quiet, "print only the timing lines");
  cmd->add_option("--strategy-options", opts->strategy_options,
                  "predicted-ttft's score-term weights TERM=W,... (extra_work, evict, fill, "
                  "decode; default 1 each; 0 ablates the term)");
  cmd->add_option("--records", opts->records,
                  "directory for per-request records (JSONL) of each run's first trial, "
                  "DIR/<scenario>/<workload>_<label>_<strategy>.jsonl (for the reports' plots)");
  cmd->callback([opts] { SetExitCode(Run(*opts)); });
}

}  // namespace kinference::sim
