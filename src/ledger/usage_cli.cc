#include "ledger/usage_cli.h"

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "accounting/config.h"
#include "accounting/usage_query.h"
#include "common/cli_exit.h"
#include "ledger/store.h"

namespace kinference::ledger {
namespace {

struct Options {
  std::string config, sqlite, postgres, from, to, group_by, tenant, model, format = "json";
  bool records = false;
  int64_t limit = 100'000;
};

int Fail(const std::string& msg) {
  std::cerr << "kinference usage: " << msg << "\n";
  SetExitCode(1);
  return 1;
}

std::unique_ptr<LedgerStore> OpenStore(const Options& o, std::string& error) {
  int given = !o.config.empty() + !o.sqlite.empty() + !o.postgres.empty();
  if (given != 1) {
    error = "give exactly one of --config, --sqlite, --postgres";
    return nullptr;
  }
  if (!o.sqlite.empty()) {
    if (!std::filesystem::exists(o.sqlite)) {
      error = "no ledger at " + o.sqlite;
      return nullptr;
    }
    return MakeSqliteStore(o.sqlite, false);
  }
  if (!o.postgres.empty()) return MakePostgresStore(o.postgres);
  accounting::AccountingConfig c;
  try {
    YAML::Node root = YAML::LoadFile(o.config);
    if (!root.IsMap() || !root["accounting"]) {
      error = o.config + ": no accounting section (no ledger configured)";
      return nullptr;
    }
    c = accounting::ParseAccountingConfig(root["accounting"],
                                          std::filesystem::path(o.config).parent_path().string());
  } catch (const YAML::Exception& e) {
    error = o.config + ": " + e.what();
    return nullptr;
  } catch (const accounting::ConfigError& e) {
    error = o.config + ": " + e.what();
    return nullptr;
  }
  if (c.ledger.store == accounting::StoreKind::kSqlite &&
      !std::filesystem::exists(c.ledger.sqlite_path)) {
    error = "no ledger at " + c.ledger.sqlite_path;
    return nullptr;
  }
  auto store = MakeStore(c.ledger);
  if (!store) error = o.config + ": accounting.ledger.store is none";
  return store;
}

void Run(const Options& o) {
  std::map<std::string, std::string> params;
  if (!o.from.empty()) params["from"] = o.from;
  if (!o.to.empty()) params["to"] = o.to;
  if (!o.group_by.empty()) params["group_by"] = o.group_by;
  if (!o.tenant.empty()) params["tenant"] = o.tenant;
  if (!o.model.empty()) params["model"] = o.model;
  params["format"] = o.format;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto q = accounting::ParseUsageQuery(params, now);
  if (!q.ok()) {
    Fail(q.status().message());
    return;
  }
  std::string error;
  auto store = OpenStore(o, error);
  if (!store) {
    Fail(error);
    return;
  }
  Status s = store->Open();
  if (!s.ok()) {
    Fail(s.message());
    return;
  }
  if (o.records) {
    auto records = store->Records(q->from_ms, q->to_ms, o.tenant, o.limit);
    if (!records.ok()) {
      Fail(records.status().message());
      return;
    }
    for (const auto& r : *records) std::cout << accounting::ToJsonLine(r) << "\n";
    return;
  }
  auto rows = store->Query(*q);
  if (!rows.ok()) {
    Fail(rows.status().message());
    return;
  }
  if (rows->size() > accounting::kMaxUsageRows) {
    Fail("more than " + std::to_string(accounting::kMaxUsageRows) +
         " rows: narrow the range or group by fewer keys");
    return;
  }
  if (q->format == accounting::UsageFormat::kCsv) {
    std::cout << accounting::RenderCsv(*q, *rows);
  } else {
    std::cout << accounting::RenderJson(*q, *rows) << "\n";
  }
}

}  // namespace

void RegisterUsageCommand(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("usage",
                                 "Query the usage ledger (tokens and cost per tenant, "
                                 "model, provider, endpoint, hour or day)");
  cmd->add_option("--config", o->config,
                  "Gateway config whose accounting section names the ledger");
  cmd->add_option("--sqlite", o->sqlite, "SQLite ledger file");
  cmd->add_option("--postgres", o->postgres,
                  "PostgreSQL connection string (libpq conninfo or URL)");
  cmd->add_option("--from", o->from, "Start (RFC 3339, date or Unix seconds; default: to - 24 h)");
  cmd->add_option("--to", o->to, "End, exclusive (default: now)");
  cmd->add_option("--group-by", o->group_by,
                  "Comma-separated: tenant, model, provider, endpoint, hour, day");
  cmd->add_option("--tenant", o->tenant, "Only this tenant");
  cmd->add_option("--model", o->model, "Only this served model");
  cmd->add_option("--format", o->format, "json or csv")->check(CLI::IsMember({"json", "csv"}));
  cmd->add_flag("--records", o->records, "Print raw records as JSON lines instead");
  cmd->add_option("--limit", o->limit, "At most this many records with --records")
      ->check(CLI::PositiveNumber);
  cmd->callback([o] { Run(*o); });
}

}  // namespace kinference::ledger
