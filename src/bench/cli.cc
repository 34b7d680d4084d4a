#include "bench/cli.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include "bench/driver.h"
#include "bench/http_load.h"
#include "common/progress.h"
#include "http/client.h"
#include "workload/report.h"
#include "workload/workload.h"

namespace kinference::bench {
namespace {

struct CliOptions {
  std::string target;
  std::string workload = "shared-prefix";
  size_t sessions = 0;  // 0: workload default (24; the whole trace slice for trace)
  double rate = 0;
  size_t concurrency = 0;
  std::string strategy;
  std::string model;
  double time_scale = 1.0;
  std::string trace = "data/traces/mooncake_conversation_trace.jsonl";
  size_t offset = 0;
  double speed = 1.0;
  size_t trace_sample = 1;
  int max_output_tokens = 0;
  uint64_t seed = 1;
  workload::SharedPrefixShape shared_prefix;
  std::string out_dir;
  std::string summary;
  std::string label;
  double request_timeout_s = 1800;
  std::string table_summary;
};

// The first model the target serves (GET /v1/models), for runs without --model.
Result<std::string> DiscoverModel(const std::string& host, uint16_t port) {
  http::ClientRequest req;
  req.method = "GET";
  req.host = host;
  req.port = port;
  req.target = "/v1/models";
  req.header_timeout_s = 10;
  auto r = http::FetchSync(std::move(req));
  if (!r.ok()) return r.status();
  boost::system::error_code ec;
  auto v = boost::json::parse(r->body, ec);
  if (ec || r->status != 200 || !v.is_object()) {
    return Status(ErrorCode::kUnavailable, "GET /v1/models failed; give --model");
  }
  const auto* data = v.as_object().if_contains("data");
  if (!data || !data->is_array() || data->as_array().empty() || !data->as_array()[0].is_object()) {
    return Status(ErrorCode::kUnavailable, "no model listed by /v1/models; give --model");
  }
  const auto* id = data->as_array()[0].as_object().if_contains("id");
  if (!id || !id->is_string()) return Status(ErrorCode::kUnavailable, "model without id");
  return std::string(id->as_string());
}

int RunBench(const CliOptions& o) {
  auto hp = http::ParseHostPort(o.target);
  if (!hp.ok()) {
    fmt::print(stderr, "bench: bad --target '{}': {}\n", o.target, hp.status().message());
    return 2;
  }
  workload::WorkloadSpec spec;
  spec.name = o.workload;
  spec.sessions = o.sessions > 0 ? o.sessions : (o.workload == "trace" ? 0 : spec.sessions);
  spec.rate_rps = o.rate;
  spec.seed = o.seed;
  spec.trace_path = o.trace;
  spec.trace_offset = o.offset;
  spec.speed = o.speed;
  spec.trace_sample = o.trace_sample;
  spec.max_output_tokens = o.max_output_tokens;
  spec.shared_prefix = o.shared_prefix;
  auto sessions = workload::MakeWorkload(spec);
  if (!sessions.ok()) {
    fmt::print(stderr, "bench: {}\n", sessions.status().message());
    return 2;
  }

  DriverOptions d;
  d.host = hp->first;
  d.port = hp->second;
  d.strategy = o.strategy;
  d.time_scale = o.time_scale;
  d.concurrency = o.concurrency;
  d.request_timeout_s = o.request_timeout_s;
  if (d.concurrency == 0 && o.rate <= 0 && o.workload != "trace") d.concurrency = 1;
  d.model = o.model;
  if (d.model.empty()) {
    auto m = DiscoverModel(d.host, d.port);
    if (!m.ok()) {
      fmt::print(stderr, "bench: {}\n", m.status().message());
      return 2;
    }
    d.model = *m;
  }
  size_t total = 0;
  for (const auto& s : *sessions) total += s.turns.size();
  // A progress line on a terminal; nothing when stderr is a log or a pipe.
  auto progress = std::make_shared<ProgressLine>(TerminalStderr(), "bench", "requests", total);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  d.on_record = [progress, elapsed](const workload::RequestRecord&, size_t done) {
    progress->Update(done, elapsed());
  };
  fmt::print(
      stderr, "bench: {} {} requests ({} sessions) -> {} strategy={} {} time_scale={}\n",
      o.workload, total, sessions->size(), o.target, o.strategy.empty() ? "direct" : o.strategy,
      d.concurrency > 0 ? fmt::format("concurrency={}", d.concurrency) : std::string("open-loop"),
      o.time_scale);

  auto run = RunSessions(*sessions, d);
  progress->Finish(run.ok() ? run->records.size() : 0, elapsed());
  if (!run.ok()) {
    fmt::print(stderr, "bench: {}\n", run.status().message());
    return 2;
  }
  workload::RunInfo info{o.workload,   o.strategy.empty() ? "direct" : o.strategy,
                         o.label,      o.target,
                         o.time_scale, run->duration_s};
  info.concurrency = d.concurrency;
  workload::Summary summary = workload::Summarize(run->records, info);
  auto json = workload::SummaryJson(summary);

  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    std::string name = (o.label.empty() ? o.workload : o.label) + "_" + info.strategy;
    std::ofstream f(std::filesystem::path(o.out_dir) / (name + ".jsonl"), std::ios::trunc);
    for (const auto& r : run->records) f << boost::json::serialize(workload::RecordJson(r)) << "\n";
    if (!f) fmt::print(stderr, "bench: cannot write per-request records to {}\n", o.out_dir);
  }
  if (!o.summary.empty()) {
    if (Status st = workload::MergeIntoSummaryFile(o.summary, json); !st.ok()) {
      fmt::print(stderr, "bench: {}\n", st.message());
      return 1;
    }
  }
  boost::json::array one;
  one.push_back(json);
  fmt::print("{}", workload::FormatTable(one));
  if (summary.errors > 0) {
    fmt::print(stderr, "bench: {} of {} requests failed; first: {}\n", summary.errors,
               summary.requests, [&] {
                 for (const auto& r : run->records) {
                   if (!r.ok()) return r.error;
                 }
                 return std::string();
               }());
  }
  return summary.errors == summary.requests ? 1 : 0;
}

int PrintTable(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    fmt::print(stderr, "bench table: {} does not exist\n", path);
    return 2;
  }
  auto doc = workload::ReadSummaryFile(path);
  if (!doc.ok()) {
    fmt::print(stderr, "bench table: {}\n", doc.status().message());
    return 2;
  }
  const auto* results = doc->if_contains("results");
  if (!results || !results->is_array()) {
    fmt::print(stderr, "bench table: {} has no results array\n", path);
    return 2;
  }
  fmt::print("{}", workload::FormatTable(results->as_array()));
  return 0;
}

boost::json::object StatsJson(const LatencyStats& s) {
  return {{"p50_us", s.p50_us},
          {"p90_us", s.p90_us},
          {"p99_us", s.p99_us},
          {"mean_us", s.mean_us},
          {"max_us", s.max_us}};
}

struct HttpCliOptions {
  std::string target;
  std::string body_file;
  std::vector<std::string> headers;
  HttpLoadOptions load;
};

int RunHttp(const HttpCliOptions& c) {
  HttpLoadOptions o = c.load;
  auto hp = http::ParseHostPort(c.target);
  if (!hp.ok()) {
    fmt::print(stderr, "bench http: bad --target '{}': {}\n", c.target, hp.status().message());
    return 2;
  }
  o.host = hp->first;
  o.port = hp->second;
  if (!c.body_file.empty()) {
    std::ifstream f(c.body_file, std::ios::binary);
    if (!f) {
      fmt::print(stderr, "bench http: cannot read --body-file {}\n", c.body_file);
      return 2;
    }
    o.body.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  for (const auto& h : c.headers) {
    size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0) {
      fmt::print(stderr, "bench http: --header wants 'Name: value', got '{}'\n", h);
      return 2;
    }
    size_t v = h.find_first_not_of(' ', colon + 1);
    o.headers.emplace_back(h.substr(0, colon), v == std::string::npos ? "" : h.substr(v));
  }
  auto r = RunHttpLoad(o);
  if (!r.ok()) {
    fmt::print(stderr, "bench http: {}\n", r.status().message());
    return 2;
  }
  boost::json::object out{{"target", c.target},
                          {"path", o.path},
                          {"connections", o.connections},
                          {"requests", r->requests},
                          {"errors", r->errors},
                          {"first_error", r->first_error},
                          {"reconnects", r->reconnects},
                          {"duration_s", r->duration_s},
                          {"requests_per_s", r->requests_per_s},
                          {"first_byte", StatsJson(r->first_byte)},
                          {"total", StatsJson(r->total)}};
  fmt::print("{}\n", boost::json::serialize(out));
  fmt::print(stderr,
             "bench http: {} ok, {} errors{}, {:.0f} requests/s; first byte p50 {:.0f} us p99 "
             "{:.0f} us; total p50 {:.0f} us p99 {:.0f} us\n",
             r->requests, r->errors, r->errors ? " (first: " + r->first_error + ")" : "",
             r->requests_per_s, r->first_byte.p50_us, r->first_byte.p99_us, r->total.p50_us,
             r->total.p99_us);
  return r->requests == 0 ? 1 : 0;
}

void RegisterHttp(CLI::App* bench) {
  auto c = std::make_shared<HttpCliOptions>();
  auto* cmd = bench->add_subcommand(
      "http",
      "Closed-loop HTTP load: one request repeated on N keep-alive connections; prints "
      "JSON (requests/s, first-byte and total latency percentiles in microseconds)");
  cmd->add_option("--target", c->target, "http://host:port")->required();
  cmd->add_option("--method", c->load.method)->capture_default_str();
  cmd->add_option("--path", c->load.path)->capture_default_str();
  cmd->add_option("--body", c->load.body, "request body (JSON)");
  cmd->add_option("--body-file", c->body_file, "request body from a file");
  cmd->add_option("--header", c->headers, "extra header 'Name: value' (repeatable)");
  cmd->add_option("--connections", c->load.connections)->capture_default_str();
  cmd->add_option("--requests", c->load.requests, "measured requests")->capture_default_str();
  cmd->add_option("--warmup", c->load.warmup, "requests sent before measuring")
      ->capture_default_str();
  cmd->add_option("--timeout", c->load.timeout_s, "seconds per request")->capture_default_str();
  cmd->add_flag("--new-connection", c->load.new_connection_per_request,
                "open a connection per request");
  cmd->callback([c] { SetExitCode(RunHttp(*c)); });
}

}  // namespace

void RegisterCommand(CLI::App& app) {
  auto o = std::make_shared<CliOptions>();
  auto* cmd = app.add_subcommand(
      "bench", "Load client: replay a workload as streaming chat completions and report TTFT");
  cmd->add_option("--target", o->target, "URL of the gateway or replica, http://host:port");
  cmd->add_option("--workload", o->workload, "shared-prefix | independent | multiturn | trace")
      ->capture_default_str();
  cmd->add_option("--sessions,--limit", o->sessions,
                  "sessions (requests for one-turn workloads); trace: lines used (0: all)");
  cmd->add_option("--rate", o->rate, "open loop: Poisson session arrivals per model second");
  cmd->add_option("--concurrency", o->concurrency, "closed loop: sessions in flight");
  cmd->add_option("--strategy", o->strategy, "sent as x-kinference-strategy; result label");
  cmd->add_option("--model", o->model, "model field (default: first of GET /v1/models)");
  cmd->add_option("--time-scale", o->time_scale,
                  "servers run K times faster; results in model time")
      ->capture_default_str();
  cmd->add_option("--trace", o->trace, "Mooncake trace JSONL")->capture_default_str();
  cmd->add_option("--offset", o->offset, "first trace line used");
  cmd->add_option("--speed", o->speed, "trace arrivals divided by this")->capture_default_str();
  cmd->add_option("--trace-sample", o->trace_sample,
                  "keep one trace conversation in N (keyed by its second block)")
      ->capture_default_str();
  cmd->add_option("--max-output-tokens", o->max_output_tokens, "clamp trace output lengths");
  cmd->add_option("--seed", o->seed, "workload seed")->capture_default_str();
  cmd->add_option("--prefixes", o->shared_prefix.prefixes, "shared-prefix: distinct prefixes")
      ->capture_default_str();
  cmd->add_option("--prefix-tokens", o->shared_prefix.prefix_tokens,
                  "shared-prefix / independent: prefix length (workload tokens)")
      ->capture_default_str();
  cmd->add_option("--suffix-tokens", o->shared_prefix.suffix_tokens,
                  "shared-prefix / independent: unique suffix length (workload tokens)")
      ->capture_default_str();
  cmd->add_option("--output-tokens", o->shared_prefix.output_tokens,
                  "shared-prefix / independent: output tokens per request")
      ->capture_default_str();
  cmd->add_option("--out", o->out_dir, "directory for per-request JSONL");
  cmd->add_option("--summary", o->summary, "JSON file collecting run summaries");
  cmd->add_option("--label", o->label, "row label (default: workload name)");
  cmd->add_option("--request-timeout", o->request_timeout_s,
                  "model seconds without progress before a request fails")
      ->capture_default_str();

  auto* table = cmd->add_subcommand("table", "Print the side-by-side table of a summary file");
  table->add_option("--summary", o->table_summary, "summary JSON file")->required();
  table->callback([o] { SetExitCode(PrintTable(o->table_summary)); });
  RegisterHttp(cmd);

  cmd->callback([o, table, cmd] {
    if (table->parsed() || cmd->got_subcommand("http")) return;
    if (o->target.empty()) {
      fmt::print(stderr, "bench: --target is required\n");
      SetExitCode(2);
      return;
    }
    SetExitCode(RunBench(*o));
  });
}

}  // namespace kinference::bench
