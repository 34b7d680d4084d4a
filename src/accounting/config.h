// Accounting configuration: the gateway config's `accounting` section (also read by
// `kinference usage --config`). Without the section the gateway keeps no ledger and
// enforces no limits (per-tenant token counters in /metrics only).
//
//   accounting:
//     ledger:
//       store: sqlite                 # sqlite (default) | postgres | none
//       sqlite_path: ledger.db        # default kinference-ledger.db; relative paths are
//                                     # resolved against the config file's directory
//       sqlite_synchronous: normal    # normal (default; WAL: durable across a process
//                                     # crash) | full (also across power loss)
//       postgres: "host=127.0.0.1 port=5432 dbname=kinference user=kinference"
//                                     # libpq conninfo or postgresql:// URL; give the
//                                     # password in PGPASSWORD or ~/.pgpass, not here
//       spool_dir: ledger.spool       # default <sqlite_path>.spool, or
//                                     # kinference-ledger.spool beside the config
//       spool_max_bytes: 268435456    # 256 MiB
//       queue_capacity: 65536         # records waiting for the writer thread
//       batch_size: 512               # records per store transaction (at most)
//       flush_interval_ms: 200        # the longest a finished request's record waits
//       retention_days: 0             # delete older records (0: keep forever)
//     prices: [...]                   # prices.h
//     estimate: {chars_per_token: 4, context_tokens: 131072,
//                model_context_tokens: {gpt-4o: 128000}}
//                                     # reservations (estimate.h): prompt characters per
//                                     # token (4: OpenAI's rule of thumb for English
//                                     # text), and the completion tokens reserved when a
//                                     # request sets no max_tokens: its served model's
//                                     # context window (model_context_tokens, else
//                                     # context_tokens). `output_tokens` (before: a
//                                     # fixed 256) is refused with a message saying so
//     limits:
//       default: {...}                # for tenants without an entry of their own
//       tenants:
//         acme: {requests_per_minute: 600, input_tokens_per_minute: 100000,
//                output_tokens_per_minute: 20000, max_concurrent_requests: 16,
//                spend_per_day_usd: 50, spend_per_month_usd: 1000,
//                on_limits_unavailable: fail_open}   # or fail_closed (see limits.h)
//     redis:                          # absent: limits are this gateway's own
//       url: redis://127.0.0.1:6379/0
//       password_env: REDIS_PASSWORD  # optional: the variable holding the password
//       timeout_ms: 100               # connect and command timeout
//       key_prefix: "kinference:"
//     usage_api:
//       admin_tenants: [ops]          # may read every tenant's usage at GET /v1/usage
//
// Errors: parsing throws ConfigError naming the field ("accounting.limits.tenants.acme.
// requests_per_minute: expected a positive integer"). Start-up only.
// Thread-safety: plain data; the parser is a pure function.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "accounting/limits.h"
#include "accounting/prices.h"
#include "common/status.h"

namespace YAML {
class Node;
}

namespace kinference::accounting {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class StoreKind { kNone, kSqlite, kPostgres };

struct LedgerConfig {
  StoreKind store = StoreKind::kSqlite;
  std::string sqlite_path = "kinference-ledger.db";
  bool sqlite_synchronous_full = false;
  std::string postgres;   // conninfo
  std::string spool_dir;  // resolved by the parser (see above)
  int64_t spool_max_bytes = 256LL << 20;
  int64_t queue_capacity = 65536;
  int64_t batch_size = 512;
  int64_t flush_interval_ms = 200;
  int64_t retention_days = 0;
};

struct EstimateConfig {
  double chars_per_token = 4;
  // Context window (tokens) of a served model without a model_context_tokens entry.
  // 131072: the 128K window of the Llama 3.1 / Qwen 2.5 generation and of gpt-4o, which
  // vLLM serves as max_model_len unless told otherwise; set the real one per model.
  int64_t context_tokens = 131072;
  std::map<std::string, int64_t> model_context_tokens;  // served model -> window
  int64_t ContextTokensFor(const std::string& model) const;
};

struct RedisConfig {
  std::string host;
  uint16_t port = 6379;
  int db = 0;
  std::string password_env;
  int64_t timeout_ms = 100;
  std::string key_prefix = "kinference:";
};

struct LimitsConfig {
  std::optional<TenantLimits> default_limits;
  std::map<std::string, TenantLimits> tenants;
  // The limits of `tenant` (its own, else the default); nullptr when unlimited.
  const TenantLimits* For(const std::string& tenant) const;
};

struct AccountingConfig {
  bool enabled = false;  // the section was given
  LedgerConfig ledger;
  PriceTable prices;
  EstimateConfig estimate;
  LimitsConfig limits;
  std::optional<RedisConfig> redis;
  std::set<std::string> admin_tenants;
};

// Parses the `accounting` node; `base_dir` resolves relative paths ("" leaves them).
// Throws ConfigError.
AccountingConfig ParseAccountingConfig(const YAML::Node& node, const std::string& base_dir);
// One tenant's limits map in the config file's form (snake_case keys, above).
TenantLimits ParseTenantLimits(const YAML::Node& node, const std::string& where);

// The same limits in Kubernetes' form, InferenceTenant's spec.limits (camelCase keys):
//   {requestsPerMinute, inputTokensPerMinute, outputTokensPerMinute,
//    maxConcurrentRequests: integers >= 1; spendPerDayUSD, spendPerMonthUSD: decimal
//    strings such as "12.50" (exact; JSON numbers are binary floats); onLimitsUnavailable:
//    FailOpen | FailClosed}. Unknown keys are errors. kInvalidArgument naming the field
//    path under `where` (e.g. "spec.limits.requestsPerMinute: expected an integer >= 1").
Result<TenantLimits> TenantLimitsFromJson(const boost::json::object& o, const std::string& where);

}  // namespace kinference::accounting
