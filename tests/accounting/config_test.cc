#include "accounting/config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

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
estimate: {chars_per_token: 3.5, output_tokens: 128}
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
  EXPECT_EQ(c.estimate.output_tokens, 128);
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
}

}  // namespace
}  // namespace kinference::accounting
