#include "accounting/config_keys.h"

#include <array>

namespace kinference::accounting {
namespace {

constexpr std::array kKeys = std::to_array<ConfigKey>({
    {"accounting", "map", "",
     "Usage ledger, prices, budgets and rate limits; without it no ledger and no limits "
     "(docs/accounting.md)."},
    {"accounting.ledger", "map", "", "Where each finished request's usage record is written."},
    {"accounting.ledger.store", "sqlite | postgres | none", "sqlite", "The ledger's store."},
    {"accounting.ledger.sqlite_path", "path", "kinference-ledger.db",
     "SQLite file; relative to the config file's folder. Its folder must be writable (checked at "
     "start-up)."},
    {"accounting.ledger.sqlite_synchronous", "normal | full", "normal",
     "normal: durable across a process crash (WAL); full: also across power loss."},
    {"accounting.ledger.postgres", "string", "",
     "libpq conninfo or postgresql:// URL (store: postgres); the password in PGPASSWORD or "
     "~/.pgpass."},
    {"accounting.ledger.spool_dir", "path", "<sqlite_path>.spool",
     "Records the store could not take wait here (kinference-ledger.spool beside the config for "
     "postgres)."},
    {"accounting.ledger.spool_max_bytes", "bytes", "268435456",
     "The spool's size limit (256 MiB)."},
    {"accounting.ledger.queue_capacity", "integer", "65536",
     "Records waiting for the writer thread."},
    {"accounting.ledger.batch_size", "integer", "512", "Records per store transaction, at most."},
    {"accounting.ledger.flush_interval_ms", "milliseconds", "200",
     "The longest a finished request's record waits to be written."},
    {"accounting.ledger.retention_days", "integer", "0",
     "Records older than this are deleted (0: kept forever)."},
    {"accounting.prices[]", "list", "",
     "Prices in USD per million tokens; the most specific entry wins (src/accounting/prices.h)."},
    {"accounting.prices[].model", "string", "", "Served model name, or \"*\" for any; required."},
    {"accounting.prices[].provider", "string", "*", "Pool or provider name, or \"*\" for any."},
    {"accounting.prices[].input", "USD / 1M tokens", "", "Uncached prompt tokens; required."},
    {"accounting.prices[].cached_input", "USD / 1M tokens", "input",
     "Prompt tokens read from a prefix cache."},
    {"accounting.prices[].cache_write", "USD / 1M tokens", "input",
     "Prompt tokens written to a cache (Anthropic's cache_creation_input_tokens)."},
    {"accounting.prices[].output", "USD / 1M tokens", "", "Completion tokens; required."},
    {"accounting.estimate", "map", "",
     "How a request's reservation is estimated before its usage is known."},
    {"accounting.estimate.chars_per_token", "number in [0.5, 100]", "4",
     "Prompt characters per token (OpenAI's rule of thumb for English)."},
    {"accounting.estimate.output_tokens", "", "",
     "Refused at start-up: no longer used (a request without max_tokens reserves its "
     "model's context window; set context_tokens or model_context_tokens)."},
    {"accounting.estimate.context_tokens", "integer in [1, 1e8]", "131072",
     "Context window, in tokens, of a model without an entry in model_context_tokens: the "
     "completion tokens reserved for a request that sets no max_tokens."},
    {"accounting.estimate.model_context_tokens", "map: model -> integer", "",
     "Context window per served model name, overriding context_tokens for that model."},
    {"accounting.limits", "map", "",
     "Per-tenant rate limits and budgets (src/accounting/limits.h)."},
    {"accounting.limits.default", "map", "", "Limits of tenants without an entry of their own."},
    {"accounting.limits.default.requests_per_minute", "integer", "",
     "Requests per minute (none: no limit)."},
    {"accounting.limits.default.input_tokens_per_minute", "integer", "",
     "Prompt tokens per minute."},
    {"accounting.limits.default.output_tokens_per_minute", "integer", "",
     "Completion tokens per minute."},
    {"accounting.limits.default.max_concurrent_requests", "integer", "",
     "Requests in flight at once."},
    {"accounting.limits.default.spend_per_day_usd", "USD", "", "Spend per UTC day."},
    {"accounting.limits.default.spend_per_month_usd", "USD", "", "Spend per UTC month."},
    {"accounting.limits.default.on_limits_unavailable", "fail_open | fail_closed", "fail_open",
     "What a request gets while the shared limiter (Redis) cannot be reached."},
    {"accounting.limits.tenants", "map", "",
     "Per tenant: `<tenant>: {...}` with the keys of accounting.limits.default."},
    {"accounting.limits.tenants.<tenant>", "map", "",
     "One tenant's limits (keys as accounting.limits.default)."},
    {"accounting.redis", "map", "",
     "Limits shared by every gateway replica through Redis; absent: each gateway's own."},
    {"accounting.redis.url", "redis://host:port[/db]", "", "Required; no password in it."},
    {"accounting.redis.password_env", "string", "",
     "The environment variable holding the password."},
    {"accounting.redis.timeout_ms", "milliseconds", "100", "Connect and command timeout."},
    {"accounting.redis.key_prefix", "string",
     "kinference:", "Prefix of every key the gateway writes."},
    {"accounting.usage_api", "map", "", "GET /v1/usage."},
    {"accounting.usage_api.admin_tenants", "list of strings", "",
     "Tenants that may read every tenant's usage (others their own)."},
});

}  // namespace

std::span<const ConfigKey> AccountingConfigKeys() { return kKeys; }

}  // namespace kinference::accounting
