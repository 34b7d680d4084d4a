// LedgerStore: where usage records are kept (I/O layer). SQLite (sqlite_store.cc; WAL,
// embedded, the default for one gateway) or PostgreSQL (postgres_store.cc; libpq, one
// ledger shared by several gateway replicas). Both use accounting/schema.h's schema and
// migrations and accounting/usage_query.h's aggregate SQL.
//
// Errors: kUnavailable when the store cannot be reached (connection refused or lost,
// database locked past the busy timeout, disk full); kInternal for anything else;
// kFailedPrecondition-like refusals (a database newer than this program) are kInternal
// with a message saying so. A failed Write changes nothing (one transaction).
// Idempotence: Write skips records whose record_id is already stored, so a batch re-sent
// after a lost acknowledgement is counted once.
//
// Thread-safety: an instance is used by one thread at a time; open one per thread (the
// ledger writer and the query service each have their own).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "accounting/config.h"
#include "accounting/usage_query.h"
#include "accounting/usage_record.h"
#include "common/status.h"

namespace kinference::ledger {

class LedgerStore {
 public:
  virtual ~LedgerStore() = default;
  // Connects (again, after a failure) and migrates the schema to the latest version.
  virtual Status Open() = 0;
  // Inserts `records` in one transaction.
  virtual Status Write(const std::vector<accounting::UsageRecord>& records) = 0;
  // Aggregate rows for `q` (at most accounting::kMaxUsageRows + 1, so callers can tell
  // the limit was passed).
  virtual Result<std::vector<accounting::UsageRow>> Query(const accounting::UsageQuery& q) = 0;
  // Raw records in [from_ms, to_ms), oldest first, at most `limit`; only `tenant`'s
  // when non-empty.
  virtual Result<std::vector<accounting::UsageRecord>> Records(int64_t from_ms, int64_t to_ms,
                                                               const std::string& tenant,
                                                               int64_t limit) = 0;
  // Deletes records older than `time_ms`; how many.
  virtual Result<int64_t> DeleteBefore(int64_t time_ms) = 0;
  // The database's schema version (0: none yet).
  virtual Result<int> SchemaVersion() = 0;
  // "sqlite:<path>" or "postgres" (never the connection string: it may hold secrets).
  virtual std::string Describe() const = 0;
};

// The store `config` names; nullptr for StoreKind::kNone. Not opened yet.
std::unique_ptr<LedgerStore> MakeStore(const accounting::LedgerConfig& config);

std::unique_ptr<LedgerStore> MakeSqliteStore(std::string path, bool synchronous_full);
std::unique_ptr<LedgerStore> MakePostgresStore(std::string conninfo);

}  // namespace kinference::ledger
