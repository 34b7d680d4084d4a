// Helpers shared by the ledger tests: usage records with distinct ids, temporary
// directories, and one PostgreSQL and one Redis server per test binary (started on first use, as
// the package's unprivileged user when run as root; testing/services.h).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "accounting/usage_record.h"
#include "testing/services.h"

namespace kinference::ledger::testutil {

inline accounting::UsageRecord Record(int i, const std::string& tenant = "acme",
                                      int64_t time_ms = 1741608000000) {
  accounting::UsageRecord r;
  r.record_id = accounting::MakeRecordId(0xfeedULL, static_cast<uint64_t>(i));
  r.time_ms = time_ms;
  r.request_id = "req-" + std::to_string(i);
  r.tenant = tenant;
  r.front = "openai";
  r.requested_model = "llama";
  r.served_model = "llama";
  r.provider = "pool-a";
  r.endpoint = "pool-a/0";
  r.tokens = {.prompt = 100, .cached = 60, .cache_creation = 0, .completion = 10};
  r.ttft_ms = 12.5;
  r.e2e_ms = 100;
  r.outcome = "success";
  r.status = 200;
  r.cost_nano_usd = 1000 + i;
  r.priced = true;
  r.gateway = "test:1";
  return r;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "kinference-ledger-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// One PostgreSQL server for the whole test binary; a start failure fails the test.
inline testing::PostgresServer* SharedPostgres() {
  static std::unique_ptr<testing::PostgresServer> server;
  static std::string error;
  if (!server && error.empty()) {
    server = testing::PostgresServer::Start(&error);
    if (!server && error.empty()) error = "unknown error";
  }
  EXPECT_TRUE(server) << "PostgreSQL did not start: " << error;
  return server.get();
}

// One Redis server for the whole test binary; a start failure fails the test.
inline testing::RedisServer* SharedRedis() {
  static std::unique_ptr<testing::RedisServer> server;
  static std::string error;
  if (!server && error.empty()) {
    server = testing::RedisServer::Start(&error);
    if (!server && error.empty()) error = "unknown error";
  }
  EXPECT_TRUE(server) << "redis-server did not start: " << error;
  return server.get();
}

}  // namespace kinference::ledger::testutil
