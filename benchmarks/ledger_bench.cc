// Usage ledger write throughput (records/s) for SQLite and PostgreSQL, through the store
// (one transaction per batch) and through the LedgerWriter (Submit from the caller,
// batches on the writer thread), and the cost of one budget/rate-limit check: local
// (in memory) and through Redis (one Lua script round trip on loopback). PostgreSQL and
// Redis are started by the benchmark itself (tests/testing/services.h), as in the tests.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "accounting/calendar.h"
#include "accounting/limits.h"
#include "ledger/redis_limiter.h"
#include "ledger/store.h"
#include "ledger/writer.h"
#include "testing/services.h"

namespace kinference::ledger {
namespace {

accounting::UsageRecord Record(uint64_t i) {
  accounting::UsageRecord r;
  r.record_id = accounting::MakeRecordId(0xbe7cULL, i);
  r.time_ms = 1741608000000 + static_cast<int64_t>(i);
  r.request_id = "req-" + std::to_string(i);
  r.tenant = "tenant-" + std::to_string(i % 16);
  r.front = "openai";
  r.requested_model = r.served_model = "meta-llama/Llama-3.1-8B-Instruct";
  r.provider = "pool-a";
  r.endpoint = "pool-a/" + std::to_string(i % 4);
  r.tokens = {.prompt = 1200, .cached = 800, .cache_creation = 0, .completion = 180};
  r.ttft_ms = 85.5;
  r.e2e_ms = 2400;
  r.outcome = "success";
  r.status = 200;
  r.policy_decision = "allowed";
  r.cost_nano_usd = 123456;
  r.priced = true;
  r.gateway = "bench:1";
  return r;
}

std::string TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kinference-bench-XXXXXX").string();
  return mkdtemp(tmpl.data());
}

testing::PostgresServer* Postgres() {
  static std::string error;
  static auto server = testing::PostgresServer::Start(&error);
  return server.get();
}

testing::RedisServer* Redis() {
  static std::string error;
  static auto server = testing::RedisServer::Start(&error);
  return server.get();
}

uint64_t next_id = 0;

void WriteBatches(benchmark::State& state, LedgerStore& store) {
  const size_t batch = static_cast<size_t>(state.range(0));
  if (!store.Open().ok()) {
    state.SkipWithError("store did not open");
    return;
  }
  std::vector<accounting::UsageRecord> records;
  for (auto _ : state) {
    state.PauseTiming();
    records.clear();
    for (size_t i = 0; i < batch; ++i) records.push_back(Record(next_id++));
    state.ResumeTiming();
    if (!store.Write(records).ok()) state.SkipWithError("write failed");
  }
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * batch), benchmark::Counter::kIsRate);
}

void BM_SqliteStoreWrite(benchmark::State& state) {
  const std::string dir = TempDir();
  auto store = MakeSqliteStore(dir + "/ledger.db", false);
  WriteBatches(state, *store);
  store.reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SqliteStoreWrite)->Arg(1)->Arg(64)->Arg(512)->UseRealTime();

void BM_PostgresStoreWrite(benchmark::State& state) {
  if (!Postgres()) {
    state.SkipWithError("PostgreSQL did not start");
    return;
  }
  auto store = MakePostgresStore(Postgres()->conninfo());
  WriteBatches(state, *store);
}
BENCHMARK(BM_PostgresStoreWrite)->Arg(1)->Arg(64)->Arg(512)->UseRealTime();

// End to end: the request path's Submit plus the writer thread's batching, until the
// records are committed (Flush). One iteration = 10,000 records.
void WriterThroughput(benchmark::State& state, std::unique_ptr<LedgerStore> store) {
  const std::string dir = TempDir();
  LedgerWriter w(std::move(store), dir + "/spool", 1 << 30,
                 {.queue_capacity = 1 << 20, .batch_size = 512, .flush_interval_ms = 200});
  if (!w.Start().ok()) {
    state.SkipWithError("writer did not start");
    return;
  }
  for (auto _ : state) {
    for (int i = 0; i < 10'000; ++i) w.Submit(Record(next_id++));
    w.Flush();
  }
  w.Stop();
  if (w.stats().written != static_cast<uint64_t>(state.iterations()) * 10'000)
    state.SkipWithError("not every record was written");
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * 10'000), benchmark::Counter::kIsRate);
  std::filesystem::remove_all(dir);
}

void BM_SqliteWriter(benchmark::State& state) {
  const std::string dir = TempDir();
  WriterThroughput(state, MakeSqliteStore(dir + "/ledger.db", false));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SqliteWriter)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_PostgresWriter(benchmark::State& state) {
  if (!Postgres()) {
    state.SkipWithError("PostgreSQL did not start");
    return;
  }
  WriterThroughput(state, MakePostgresStore(Postgres()->conninfo()));
}
BENCHMARK(BM_PostgresWriter)->UseRealTime()->Unit(benchmark::kMillisecond);

const double kNoon = *accounting::ParseTime("2025-03-10T12:00:00Z");
const accounting::TenantLimits kLimits{.requests_per_minute = 1'000'000'000,
                                       .input_tokens_per_minute = 1'000'000'000'000,
                                       .output_tokens_per_minute = 1'000'000'000'000,
                                       .max_concurrent_requests = 1'000'000,
                                       .spend_per_day = 1'000'000'000'000'000,
                                       .spend_per_month = 1'000'000'000'000'000};

// One reservation and its settlement, every limit configured.
void CheckAndSettle(benchmark::State& state, accounting::Limiter& lim) {
  uint64_t i = 0;
  for (auto _ : state) {
    std::promise<std::optional<accounting::Reservation>> p;
    lim.Reserve("acme", kLimits, {.input_tokens = 1200, .output_tokens = 256, .cost = 5000},
                std::to_string(i++), kNoon, [&](accounting::Admission a, auto r) {
                  if (!a.admitted) state.SkipWithError("refused");
                  p.set_value(std::move(r));
                });
    auto r = p.get_future().get();
    if (r) lim.Settle(*r, {.input_tokens = 400, .output_tokens = 180, .cost = 3000}, kNoon);
  }
}

void BM_LocalLimitCheck(benchmark::State& state) {
  accounting::LocalLimiter lim;
  CheckAndSettle(state, lim);
}
BENCHMARK(BM_LocalLimitCheck);

void BM_RedisLimitCheck(benchmark::State& state) {
  if (!Redis()) {
    state.SkipWithError("redis-server did not start");
    return;
  }
  accounting::RedisConfig c;
  c.host = "127.0.0.1";
  c.port = Redis()->port();
  c.timeout_ms = 1000;
  RedisLimiter lim(c, 600, [](std::function<void()> f) { f(); });
  CheckAndSettle(state, lim);
}
BENCHMARK(BM_RedisLimitCheck)->UseRealTime();

// Throughput across tenants: 64 reservations for 16 tenants queued at once (the limiter's
// 2 workers share them out), awaited, then settled; items/s counts reservations.
void BM_RedisLimitCheck16Tenants(benchmark::State& state) {
  if (!Redis()) {
    state.SkipWithError("redis-server did not start");
    return;
  }
  accounting::RedisConfig c;
  c.host = "127.0.0.1";
  c.port = Redis()->port();
  c.timeout_ms = 1000;
  RedisLimiter lim(c, 600, [](std::function<void()> f) { f(); });
  constexpr int kBatch = 64, kTenants = 16;
  uint64_t i = 0;
  for (auto _ : state) {
    std::vector<std::promise<std::optional<accounting::Reservation>>> ps(kBatch);
    for (int k = 0; k < kBatch; ++k) {
      lim.Reserve("tenant" + std::to_string(k % kTenants), kLimits,
                  {.input_tokens = 1200, .output_tokens = 256, .cost = 5000}, std::to_string(i++),
                  kNoon, [&, k](accounting::Admission a, auto r) {
                    if (!a.admitted) state.SkipWithError("refused");
                    ps[k].set_value(std::move(r));
                  });
    }
    for (auto& p : ps) {
      if (auto r = p.get_future().get())
        lim.Settle(*r, {.input_tokens = 400, .output_tokens = 180, .cost = 3000}, kNoon);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBatch);
}
BENCHMARK(BM_RedisLimitCheck16Tenants)->UseRealTime();

}  // namespace
}  // namespace kinference::ledger

BENCHMARK_MAIN();
