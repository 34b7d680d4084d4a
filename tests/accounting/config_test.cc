#include "accounting/config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <boost/json/parse.hpp>

namespace kinference::accounting {
namespace {

AccountingConfig Parse(const std::string& yaml, const std::string& base = "/etc/kinference") {
  return ParseAccountingConfig(YAML::Load(yaml), base);
}

std::string ErrorOf(const std::string& yaml) {
  try {
    Parse(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(AccountingConfig, AnEmptySectionMeansASqliteLedgerBesideTheConfig) {
  AccountingConfig c = Parse("~");
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.ledger.store, StoreKind::kSqlite);
  EXPECT_EQ(c.ledger.sqlite_path, "/etc/kinference/kinference-ledger.db");
  EXPECT_EQ(c.ledger.spool_dir, "/etc/kinference/kinference-ledger.db.spool");
  EXPECT_FALSE(c.redis.has_value());
}

TEST(AccountingConfig, ReadsEverySection) {
  AccountingConfig c = Parse(R"(
ledger: {store: postgres, postgres: "host=db dbname=k", spool_dir: spool, batch_size: 100,
         flush_interval_ms: 50, retention_days: 90}
prices:
  - {model: llama, provider: pool-a, input: 0.10, output: "0.40"}
  - {model: "*", input: 3, cached_input: 0.3, cache_write: 3.75, output: 15}
estimate: {chars_per_token: 3.5, context_tokens: 32768, model_context_tokens: {llama: 8192}}
limits:
  default: {requests_per_minute: 60}
  tenants:
    acme: {input_tokens_per_minute: 1000, spend_per_day_usd: 2.5, on_limits_unavailable: fail_closed}
redis: {url: "redis://127.0.0.1:6390/2", timeout_ms: 20}
usage_api: {admin_tenants: [ops]}
)");
  EXPECT_EQ(c.ledger.store, StoreKind::kPostgres);
  EXPECT_EQ(c.ledger.spool_dir, "/etc/kinference/spool");
  EXPECT_EQ(c.ledger.batch_size, 100);
  EXPECT_EQ(c.prices.Lookup("pool-a", "llama")->output, 400'000'000);
  EXPECT_EQ(c.prices.Lookup("pool-a", "llama")->cached_input, 100'000'000);  // defaults to input
  EXPECT_EQ(c.prices.Lookup("x", "y")->cache_write, 3'750'000'000);
  EXPECT_EQ(c.estimate.ContextTokensFor("llama"), 8192);
  EXPECT_EQ(c.estimate.ContextTokensFor("other"), 32768);
  ASSERT_NE(c.limits.For("acme"), nullptr);
  EXPECT_EQ(c.limits.For("acme")->spend_per_day, 2'500'000'000);
  EXPECT_EQ(c.limits.For("acme")->on_unavailable, OnUnavailable::kFailClosed);
  EXPECT_FALSE(c.limits.For("acme")->requests_per_minute.has_value());  // own entry replaces
  EXPECT_EQ(c.limits.For("other")->requests_per_minute, 60);
  ASSERT_TRUE(c.redis.has_value());
  EXPECT_EQ(c.redis->host, "127.0.0.1");
  EXPECT_EQ(c.redis->port, 6390);
  EXPECT_EQ(c.redis->db, 2);
  EXPECT_TRUE(c.admin_tenants.contains("ops"));
}

TEST(AccountingConfig, ErrorsNameTheField) {
  EXPECT_EQ(ErrorOf("{ledger: {store: mysql}}"),
            "accounting.ledger.store: expected sqlite, postgres or none, got 'mysql'");
  EXPECT_EQ(
      ErrorOf("{ledger: {store: postgres}}"),
      "accounting.ledger.postgres: missing (store: postgres needs a libpq connection string)");
  EXPECT_NE(
      ErrorOf("{prices: [{model: m, input: -1, output: 1}]}").find("accounting.prices[0].input"),
      std::string::npos);
  EXPECT_EQ(ErrorOf("{prices: [{model: m, input: 1}]}"),
            "accounting.prices[0].output: missing (USD per million output tokens)");
  EXPECT_NE(ErrorOf("{limits: {tenants: {acme: {requests_per_minute: 0}}}}")
                .find("accounting.limits.tenants.acme.requests_per_minute: expected an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{limits: {tenants: {acme: {rpm: 5}}}}")
                .find("accounting.limits.tenants.acme.rpm: unknown key"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{redis: {url: \"redis://:secret@h:1\"}}").find("accounting.redis.url"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{budgets: {}}").find("accounting.budgets: unknown key"), std::string::npos);
  EXPECT_EQ(ErrorOf("{[prices]: []}"), "accounting: keys must be plain strings");
  EXPECT_EQ(ErrorOf("{limits: {tenants: {[acme]: {}}}}"),
            "accounting.limits.tenants: keys must be plain strings");
  EXPECT_NE(ErrorOf("{estimate: {model_context_tokens: {m: 0}}}")
                .find("accounting.estimate.model_context_tokens.m: expected an integer"),
            std::string::npos);
}

// A config written for the fixed 256-token output estimate is refused with the reason,
// never silently reserved at 256 (issue 25, item 2).
TEST(AccountingConfig, TheRemovedOutputTokensEstimateIsRefusedSayingWhy) {
  EXPECT_NE(ErrorOf("{estimate: {output_tokens: 256}}")
                .find("accounting.estimate.output_tokens: no longer used: a request without "
                      "max_tokens reserves its model's context window"),
            std::string::npos);
}

TEST(TenantLimitsFromJson, ReadsInferenceTenantSpecLimits) {
  auto l = TenantLimitsFromJson(boost::json::parse(R"({"requestsPerMinute": 600,
      "inputTokensPerMinute": 100000, "outputTokensPerMinute": 20000,
      "maxConcurrentRequests": 16, "spendPerDayUSD": "50", "spendPerMonthUSD": "1000.25",
      "onLimitsUnavailable": "FailClosed"})")
                                    .as_object(),
                                "spec.limits");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->requests_per_minute, 600);
  EXPECT_EQ(l->max_concurrent_requests, 16);
  EXPECT_EQ(l->spend_per_month, 1'000'250'000'000);
  EXPECT_EQ(l->on_unavailable, OnUnavailable::kFailClosed);
  // The same limits as the config file's form.
  EXPECT_EQ(*l, ParseTenantLimits(YAML::Load("{requests_per_minute: 600, "
                                             "input_tokens_per_minute: 100000, "
                                             "output_tokens_per_minute: 20000, "
                                             "max_concurrent_requests: 16, spend_per_day_usd: 50, "
                                             "spend_per_month_usd: 1000.25, "
                                             "on_limits_unavailable: fail_closed}"),
                                  "t"));
}

TEST(TenantLimitsFromJson, ErrorsNameTheFieldPath) {
  auto bad = [](const char* json) {
    auto l = TenantLimitsFromJson(boost::json::parse(json).as_object(), "spec.limits");
    return l.ok() ? std::string() : l.status().message();
  };
  EXPECT_EQ(bad(R"({"requestsPerMinute": 0})"),
            "spec.limits.requestsPerMinute: expected an integer >= 1");
  EXPECT_EQ(bad(R"({"spendPerDayUSD": 1.5})"),
            "spec.limits.spendPerDayUSD: expected a decimal string of USD, e.g. \"12.50\"");
  EXPECT_EQ(bad(R"({"rpm": 5})"), "spec.limits.rpm: unknown field");
  EXPECT_EQ(bad(R"({"onLimitsUnavailable": "fail_open"})"),
            "spec.limits.onLimitsUnavailable: expected FailOpen or FailClosed");
}

}  // namespace
}  // namespace kinference::accounting
