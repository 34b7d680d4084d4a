// Accounting on the request path, end to end with real processes: `kinference gateway`
// in front of `kinference engine-sim` (a local OpenAI-compatible engine, and engine-sim's
// Anthropic mode over HTTPS as an Anthropic provider), with the usage ledger in SQLite or
// a real PostgreSQL, and limits shared through a real Redis (both started by the test as
// tests/ledger does: testing/services.h). Assertions are on the records, the responses
// and the counts, never on wall-clock times.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "../../http/tls_fake_server.h"
#include "../../ledger/ledger_test_util.h"
#include "accounting/prices.h"
#include "accounting/usage_record.h"
#include "api/sse.h"
#include "gateway/front/tenants.h"
#include "http/client.h"
#include "ledger/store.h"
#include "testing/launch.h"
#include "testing/services.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using accounting::UsageRecord;
using kinference::testing::ChildProcess;
using kinference::testing::LaunchKinference;
using ledger::testutil::SharedRedis;

std::string TempPrefix() { return "acct-" + std::to_string(getpid()) + "-"; }

std::string TempPath(const std::string& name) {
  static std::atomic<int> n{0};
  return ::testing::TempDir() + "/" + TempPrefix() + std::to_string(n++) + "-" + name;
}

// Removes this process's TempPath files (configs, databases, spools) once every test has
// run and its gateways are gone: repeated runs would otherwise fill /tmp.
class RemoveTempPaths : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(::testing::TempDir(), ec)) {
      if (e.path().filename().string().starts_with(TempPrefix()))
        std::filesystem::remove_all(e.path(), ec);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveTempPaths =
    ::testing::AddGlobalTestEnvironment(new RemoveTempPaths);

std::unique_ptr<ChildProcess> StartGateway(const std::string& yaml) {
  const std::string path = TempPath("gateway.yaml");
  std::ofstream(path) << yaml;
  return LaunchKinference({"gateway", "--config", path});
}

std::unique_ptr<ChildProcess> StartSim(const std::string& model, const std::string& time_scale,
                                       std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"engine-sim",          "--port", "0", "--time-scale", time_scale,
                                   "--served-model-name", model};
  args.insert(args.end(), extra.begin(), extra.end());
  return LaunchKinference(args);
}

http::Response Send(uint16_t port, const std::string& method, const std::string& target,
                    const std::string& body, http::Headers headers = {}) {
  http::ClientRequest r;
  r.method = method;
  r.port = port;
  r.target = target;
  r.body = body;
  r.headers = std::move(headers);
  if (target == "/v1/messages") r.headers.Add("anthropic-version", "2023-06-01");
  r.header_timeout_s = 60;  // hang guard only
  auto res = http::FetchSync(r);
  EXPECT_TRUE(res.ok()) << res.status().message();
  return res.ok() ? *res : http::Response{};
}

http::Headers With(std::initializer_list<std::pair<std::string, std::string>> h) {
  http::Headers out;
  for (const auto& [k, v] : h) out.Add(k, v);
  return out;
}

std::string Chat(const std::string& model, const std::string& content, bool stream, int max_tokens,
                 bool ignore_eos = false) {
  json::object body{{"model", model},
                    {"messages", json::array{json::object{{"role", "user"}, {"content", content}}}},
                    {"max_tokens", max_tokens},
                    {"stream", stream}};
  if (stream) body["stream_options"] = json::object{{"include_usage", true}};
  if (ignore_eos) body["ignore_eos"] = true;
  return json::serialize(body);
}

std::string Messages(const std::string& model, const std::string& content, bool stream,
                     int max_tokens) {
  return json::serialize(json::object{
      {"model", model},
      {"max_tokens", max_tokens},
      {"stream", stream},
      {"messages", json::array{json::object{{"role", "user"}, {"content", content}}}}});
}

// Every record in `store`, waiting up to 30 s for at least `want` of them.
std::vector<UsageRecord> WaitForRecords(ledger::LedgerStore& store, size_t want) {
  std::vector<UsageRecord> out;
  for (int i = 0; i < 300; ++i) {
    if (store.Open().ok()) {
      auto r = store.Records(0, INT64_MAX, "", 1'000'000);
      if (r.ok()) {
        out = std::move(*r);
        if (out.size() >= want) return out;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return out;
}

std::string Sha(const std::string& key) { return ToHex(Sha256(key)); }

// --- Cached tokens billed once: both fronts x both upstream kinds, streamed and not ---

// USD per million tokens (accounting.prices below).
constexpr double kLocalIn = 1, kLocalCached = 0.1, kLocalOut = 2;
constexpr double kClaudeIn = 3, kClaudeCached = 0.3, kClaudeWrite = 3.75, kClaudeOut = 15;

accounting::NanoUsd ExpectedCost(const UsageRecord& r) {
  const bool claude = r.provider == "claude";
  auto per_token = [](double usd_per_million) {  // nano-USD per token (exact here)
    return static_cast<int64_t>(usd_per_million * 1000 + 0.5);
  };
  const auto& t = r.tokens;
  const int64_t uncached = t.prompt - t.cached - t.cache_creation;
  return uncached * per_token(claude ? kClaudeIn : kLocalIn) +
         t.cached * per_token(claude ? kClaudeCached : kLocalCached) +
         t.cache_creation * per_token(claude ? kClaudeWrite : kLocalIn) +
         t.completion * per_token(claude ? kClaudeOut : kLocalOut);
}

TEST(AccountingIntegrationTest, CachedTokensBilledOnceOnBothFrontsAndProviderKinds) {
  auto cert = kinference::testing::MakeTestCert("sim");
  ASSERT_FALSE(cert.cert_file.empty()) << "openssl CLI failed";
  auto local = StartSim("m-local", "50");
  auto claude = StartSim("claude-sim", "50",
                         {"--require-api-key", "sk-ant-upstream", "--tls-cert", cert.cert_file,
                          "--tls-key", cert.key_file});
  ASSERT_TRUE(local && claude);
  const std::string db = TempPath("ledger.db");
  setenv("KINFERENCE_ACCT_ANTHROPIC_KEY", "sk-ant-upstream", 1);
  auto gw = StartGateway(
      "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 50\n"
      "pools:\n  - {name: local, model: m-local, endpoints: [\"http://127.0.0.1:" +
      std::to_string(local->port()) +
      "\"]}\n"
      "providers:\n  - name: claude\n    api: anthropic\n    model: claude-sim\n"
      "    serves_model: m-claude\n    base_url: https://127.0.0.1:" +
      std::to_string(claude->port()) +
      "\n    api_key_env: KINFERENCE_ACCT_ANTHROPIC_KEY\n    ca_file: " + cert.cert_file +
      "\n"
      "tenants:\n  keys:\n    - {sha256: \"" +
      Sha("sk-acme") + "\", tenant: acme}\n    - {sha256: \"" + Sha("sk-ops") +
      "\", tenant: ops}\n"
      "accounting:\n  ledger: {sqlite_path: " +
      db +
      ", flush_interval_ms: 20}\n"
      "  prices:\n"
      "    - {provider: local, model: m-local, input: 1, cached_input: 0.1, output: 2}\n"
      "    - {provider: claude, model: m-claude, input: 3, cached_input: 0.3, cache_write: 3.75, "
      "output: 15}\n"
      "  usage_api: {admin_tenants: [ops]}\n");
  unsetenv("KINFERENCE_ACCT_ANTHROPIC_KEY");
  ASSERT_TRUE(gw);

  // Each combination sends one long prompt twice: the second finds it in the prefix cache.
  struct Sent {
    std::string request_id, front, provider;
    bool stream;
    json::value usage;  // what the client saw (non-streamed), else null
  };
  std::vector<Sent> sent;
  for (const bool messages : {false, true}) {
    for (const std::string model : {"m-local", "m-claude"}) {
      for (const bool stream : {false, true}) {
        std::string prompt =
            std::string(messages ? "messages " : "chat ") + model + (stream ? " stream " : " ");
        for (int w = 0; w < 120; ++w)
          prompt += "lorem ipsum dolor sit amet " + std::to_string(w) + " ";
        for (int i = 0; i < 2; ++i) {
          const std::string id = "acct-" + std::to_string(sent.size());
          auto headers = With({{"x-request-id", id}});
          headers.Add(messages ? "x-api-key" : "authorization",
                      messages ? "sk-acme" : "Bearer sk-acme");
          auto r =
              Send(gw->port(), "POST", messages ? "/v1/messages" : "/v1/chat/completions",
                   messages ? Messages(model, prompt, stream, 4) : Chat(model, prompt, stream, 4),
                   headers);
          ASSERT_EQ(r.status, 200) << r.body;
          EXPECT_EQ(r.headers.Find("x-request-id"), id);
          json::value usage;
          if (!stream) usage = json::parse(r.body).at("usage");
          sent.push_back({id, messages ? "anthropic" : "openai",
                          model == "m-local" ? "local" : "claude", stream, usage});
        }
      }
    }
  }
  auto store = ledger::MakeSqliteStore(db, false);
  std::vector<UsageRecord> records = WaitForRecords(*store, sent.size());
  ASSERT_EQ(records.size(), sent.size());
  std::map<std::string, UsageRecord> by_id;
  for (const auto& r : records) EXPECT_TRUE(by_id.emplace(r.request_id, r).second) << r.request_id;
  accounting::NanoUsd total = 0;
  for (size_t i = 0; i < sent.size(); ++i) {
    const Sent& s = sent[i];
    SCOPED_TRACE(s.request_id + " " + s.front + " " + s.provider + (s.stream ? " stream" : ""));
    ASSERT_TRUE(by_id.count(s.request_id));
    const UsageRecord& r = by_id[s.request_id];
    EXPECT_EQ(r.tenant, "acme");
    EXPECT_EQ(r.front, s.front);
    EXPECT_EQ(r.provider, s.provider);
    EXPECT_EQ(r.outcome, "success");
    EXPECT_EQ(r.status, 200);
    EXPECT_FALSE(r.usage_estimated);
    EXPECT_TRUE(r.priced);
    EXPECT_GT(r.tokens.prompt, 100);
    EXPECT_GT(r.tokens.completion, 0);
    if (i % 2 == 1) {
      EXPECT_GT(r.tokens.cached, 0) << "the repeated prompt was not cached";
    }
    EXPECT_LE(r.tokens.cached + r.tokens.cache_creation, r.tokens.prompt);
    // engine-sim's Anthropic mode reports no cache writes; an Anthropic provider's
    // cache_creation_input_tokens are billed in tests/gateway/upstream/anthropic_provider_test.cc.
    // Billed once, at the cached price: never twice, never as full input.
    EXPECT_EQ(r.cost_nano_usd, ExpectedCost(r));
    total += r.cost_nano_usd;
    if (!s.usage.is_null()) {  // the record has the counts the client saw
      const json::object& u = s.usage.as_object();
      if (s.front == "openai") {
        EXPECT_EQ(r.tokens.prompt, u.at("prompt_tokens").as_int64());
        EXPECT_EQ(r.tokens.cached, u.at("prompt_tokens_details").at("cached_tokens").as_int64());
        EXPECT_EQ(r.tokens.completion, u.at("completion_tokens").as_int64());
      } else {
        EXPECT_EQ(r.tokens.prompt, u.at("input_tokens").as_int64() +
                                       u.at("cache_read_input_tokens").as_int64() +
                                       u.at("cache_creation_input_tokens").as_int64());
        EXPECT_EQ(r.tokens.cached, u.at("cache_read_input_tokens").as_int64());
        EXPECT_EQ(r.tokens.completion, u.at("output_tokens").as_int64());
      }
    }
  }

  // GET /v1/usage: the same totals; a tenant sees only its own; admins see everyone.
  auto acme = Send(gw->port(), "GET", "/v1/usage?from=2020-01-01&group_by=tenant,provider", "",
                   With({{"authorization", "Bearer sk-acme"}}));
  ASSERT_EQ(acme.status, 200) << acme.body;
  json::value v = json::parse(acme.body);
  accounting::NanoUsd api_total = 0;
  int64_t api_requests = 0;
  for (const auto& row : v.at("data").as_array()) {
    EXPECT_EQ(row.at("tenant"), "acme");
    api_total += row.at("cost_nano_usd").to_number<int64_t>();
    api_requests += row.at("requests").to_number<int64_t>();
  }
  EXPECT_EQ(api_total, total);
  EXPECT_EQ(api_requests, static_cast<int64_t>(sent.size()));
  auto other = Send(gw->port(), "GET", "/v1/usage?tenant=ops", "",
                    With({{"authorization", "Bearer sk-acme"}}));
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_EQ(json::parse(other.body).at("error").at("type"), "permission_error");
  auto ops = Send(gw->port(), "GET", "/v1/usage?from=2020-01-01&group_by=day&format=csv", "",
                  With({{"authorization", "Bearer sk-ops"}}));
  ASSERT_EQ(ops.status, 200) << ops.body;
  EXPECT_TRUE(ops.headers.Find("content-type").starts_with("text/csv"));
  EXPECT_TRUE(ops.body.starts_with("day,requests,")) << ops.body;
  auto bad = Send(gw->port(), "GET", "/v1/usage?group_by=color", "",
                  With({{"authorization", "Bearer sk-ops"}}));
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(json::parse(bad.body).at("error").at("param"), "group_by");
  EXPECT_EQ(Send(gw->port(), "GET", "/v1/usage", "").status, 401);
}

// --- Limits shared by two replicas through Redis ---

std::string RedisSection(uint16_t port, const std::string& prefix) {
  return "  redis: {url: \"redis://127.0.0.1:" + std::to_string(port) +
         "/0\", timeout_ms: 500, key_prefix: \"" + prefix + "\"}\n";
}

TEST(AccountingIntegrationTest, TwoReplicasSharingRedisNeverAdmitBeyondTheTokenBudget) {
  testing::RedisServer* redis = SharedRedis();
  ASSERT_TRUE(redis);
  auto sim = StartSim("m", "50");
  ASSERT_TRUE(sim);
  // 100 output tokens per minute; each request reserves (and uses: ignore_eos) 5.
  constexpr int kBudget = 100, kPerRequest = 5, kRequests = 48;
  const std::string yaml =
      "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 50\n"
      "pools:\n  - {name: p, model: m, endpoints: [\"http://127.0.0.1:" +
      std::to_string(sim->port()) +
      "\"]}\n"
      "accounting:\n  ledger: {store: none}\n"
      "  limits:\n    default: {output_tokens_per_minute: " +
      std::to_string(kBudget) + "}\n" + RedisSection(redis->port(), "burst:");
  auto a = StartGateway(yaml);
  auto b = StartGateway(yaml);
  ASSERT_TRUE(a && b);
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> admitted{0}, refused{0}, other{0};
  std::mutex mu;
  std::vector<http::Response> refusals;
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      auto r = Send(i % 2 ? a->port() : b->port(), "POST", "/v1/chat/completions",
                    Chat("m", "burst " + std::to_string(i), false, kPerRequest, true));
      if (r.status == 200) {
        admitted++;
      } else if (r.status == 429) {
        refused++;
        std::lock_guard<std::mutex> lock(mu);
        refusals.push_back(r);
      } else {
        other++;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(other, 0);
  // None refused while under the budget: every request that fits was admitted.
  EXPECT_GE(admitted, kBudget / kPerRequest);
  // None admitted beyond it: the budget plus what flowed back during the burst (the bucket
  // refills at 100/60 tokens per second; every reservation in flight was real usage).
  const double refilled = elapsed * kBudget / 60.0;
  EXPECT_LE(admitted * kPerRequest, kBudget + refilled + 1e-9) << "elapsed " << elapsed << " s";
  ASSERT_FALSE(refusals.empty());
  const auto& r = refusals.front();
  EXPECT_FALSE(r.headers.Find("retry-after").empty());
  EXPECT_FALSE(r.headers.Find("x-ratelimit-limit-tokens").empty());
  json::value err = json::parse(r.body).at("error");
  EXPECT_EQ(err.at("code"), "rate_limit_exceeded");
  EXPECT_EQ(err.at("type"), "tokens");
  // The Anthropic front refuses in its own shape.
  auto m = Send(a->port(), "POST", "/v1/messages", Messages("m", "more", false, kPerRequest));
  EXPECT_EQ(m.status, 429) << m.body;
  EXPECT_EQ(json::parse(m.body).at("error").at("type"), "rate_limit_error");
  EXPECT_FALSE(m.headers.Find("retry-after").empty());
  EXPECT_FALSE(m.headers.Find("anthropic-ratelimit-output-tokens-limit").empty());
}

// Issue 25, item 4: the burst of item 2 through three replicas sharing Redis against a
// spend budget. Output is the only priced part (input 0) and every request generates
// exactly its max_tokens (ignore_eos), so each request's worst case is its real cost
// (10 tokens x 10,000 nano-USD): exactly budget / cost requests fit, whatever the timing.
// Admitting more would overshoot; admitting fewer would be a false refusal.
TEST(AccountingIntegrationTest, ThreeReplicasSharingRedisAdmitExactlyWhatTheSpendBudgetPays) {
  testing::RedisServer* redis = SharedRedis();
  ASSERT_TRUE(redis);
  auto sim = StartSim("m", "50");
  ASSERT_TRUE(sim);
  constexpr int kMaxTokens = 10, kRequests = 50;
  constexpr int64_t kCost = kMaxTokens * 10'000, kBudget = 2'000'000;  // nano-USD: USD 0.002
  const std::string yaml =
      "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 50\n"
      "pools:\n  - {name: p, model: m, endpoints: [\"http://127.0.0.1:" +
      std::to_string(sim->port()) +
      "\"]}\n"
      "accounting:\n  ledger: {store: none}\n"
      "  prices: [{model: m, input: 0, output: 10}]\n"
      "  limits:\n    default: {spend_per_day_usd: \"0.002\"}\n" +
      RedisSection(redis->port(), "spend3:");
  std::vector<std::unique_ptr<ChildProcess>> gws;
  for (int i = 0; i < 3; ++i) {
    gws.push_back(StartGateway(yaml));
    ASSERT_TRUE(gws.back());
  }
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> admitted{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      auto r = Send(gws[i % 3]->port(), "POST", "/v1/chat/completions",
                    Chat("m", "burst " + std::to_string(i), false, kMaxTokens, true));
      if (r.status == 200) {
        admitted++;
      } else if (r.status == 429 && r.headers.Find("x-should-retry") == "false" &&
                 r.headers.Find("retry-after").empty()) {
        refused++;
      } else {
        other++;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double billed = 0;  // USD, over the three replicas
  for (const auto& g : gws) {
    const std::string text = Send(g->port(), "GET", "/metrics", "").body;
    const size_t at = text.find("kinference_cost_usd_total{");
    if (at == std::string::npos) continue;
    const size_t sp = text.find(' ', at);
    billed += std::stod(text.substr(sp + 1, text.find('\n', sp) - sp - 1));
  }
  std::printf(
      "3 replicas, %d concurrent: %d admitted, %d refused, billed USD %.6f of %.6f, %.2f s\n",
      kRequests, admitted.load(), refused.load(), billed, kBudget * 1e-9, elapsed);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(admitted, kBudget / kCost);
  EXPECT_EQ(refused, kRequests - kBudget / kCost);
  EXPECT_NEAR(billed, admitted * kCost * 1e-9, 1e-12);
}

TEST(AccountingIntegrationTest, RedisStoppedFailOpenTenantAdmittedFailClosedTenantRefused) {
  std::string error;
  auto redis = testing::RedisServer::Start(&error);
  ASSERT_TRUE(redis) << error;
  auto sim = StartSim("m", "50");
  ASSERT_TRUE(sim);
  auto gw = StartGateway(
      "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 50\n"
      "pools:\n  - {name: p, model: m, endpoints: [\"http://127.0.0.1:" +
      std::to_string(sim->port()) +
      "\"]}\n"
      "tenants: {trust_tenant_header: true, anonymous_tenant: anon}\n"
      "accounting:\n  ledger: {store: none}\n"
      "  prices: [{model: m, input: 1000, output: 1000}]\n"
      "  limits:\n    tenants:\n"
      "      open: {requests_per_minute: 1000, on_limits_unavailable: fail_open}\n"
      "      closed: {requests_per_minute: 1000, on_limits_unavailable: fail_closed}\n"
      "      broke: {spend_per_day_usd: \"0.000001\"}\n" +
      RedisSection(redis->port(), "failmode:"));
  ASSERT_TRUE(gw);
  auto as = [&](const std::string& tenant) {
    return Send(gw->port(), "POST", "/v1/chat/completions", Chat("m", "hi", false, 3),
                With({{"x-kinference-tenant", tenant}}));
  };
  EXPECT_EQ(as("open").status, 200);
  auto ok = as("closed");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.headers.Find("x-ratelimit-limit-requests"), "1000");
  // A request larger than the whole spend budget can never pass: 400 request_too_large.
  auto broke = as("broke");
  EXPECT_EQ(broke.status, 400) << broke.body;
  EXPECT_EQ(json::parse(broke.body).at("error").at("code"), "request_too_large");
  EXPECT_EQ(broke.headers.Find("x-should-retry"), "false");

  redis->Stop();
  auto open = as("open");
  EXPECT_EQ(open.status, 200) << open.body;
  auto closed = as("closed");
  EXPECT_EQ(closed.status, 503) << closed.body;
  EXPECT_FALSE(closed.headers.Find("retry-after").empty());
  EXPECT_EQ(as("anon").status, 200);  // no limits: never asks Redis

  ASSERT_TRUE(redis->Restart(&error)) << error;
  int status = 0;
  for (int i = 0; i < 50 && status != 200; ++i) {  // the limiter retries Redis after 1 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = as("closed").status;
  }
  EXPECT_EQ(status, 200);
}

// --- Durability: PostgreSQL restarted under load, SIGTERM under load ---

TEST(AccountingIntegrationTest, PostgresRestartedDuringLoadLosesNoRecord) {
  std::string error;
  auto pg = testing::PostgresServer::Start(&error);
  ASSERT_TRUE(pg) << error;
  auto sim = StartSim("m", "50");
  ASSERT_TRUE(sim);
  auto gw = StartGateway(
      "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 50\n"
      "pools:\n  - {name: p, model: m, endpoints: [\"http://127.0.0.1:" +
      std::to_string(sim->port()) +
      "\"]}\n"
      "accounting:\n  ledger: {store: postgres, postgres: \"" +
      pg->conninfo() + "\", spool_dir: " + TempPath("spool") + ", flush_interval_ms: 20}\n");
  ASSERT_TRUE(gw);
  constexpr int kWorkers = 4, kPerWorker = 30;
  std::atomic<int> done{0};
  std::mutex mu;
  std::set<std::string> completed;
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      for (int i = 0; i < kPerWorker; ++i) {
        const std::string id = "pg-" + std::to_string(w) + "-" + std::to_string(i);
        auto r = Send(gw->port(), "POST", "/v1/chat/completions", Chat("m", id, false, 3),
                      With({{"x-request-id", id}}));
        EXPECT_EQ(r.status, 200) << r.body;
        if (r.status == 200) {
          std::lock_guard<std::mutex> lock(mu);
          completed.insert(id);
        }
        done++;
      }
    });
  }
  while (done < kWorkers * kPerWorker / 4)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  pg->Stop();  // requests keep completing: their records go to the spool
  while (done < kWorkers * kPerWorker / 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(pg->Restart(&error)) << error;
  for (auto& t : workers) t.join();
  ASSERT_EQ(completed.size(), static_cast<size_t>(kWorkers * kPerWorker));
  auto store = ledger::MakePostgresStore(pg->conninfo());
  auto records = WaitForRecords(*store, completed.size());
  std::set<std::string> recorded;
  for (const auto& r : records) EXPECT_TRUE(recorded.insert(r.request_id).second) << r.request_id;
  EXPECT_EQ(recorded, completed);
}

TEST(AccountingIntegrationTest, SigtermUnderLoadKeepsEveryCompletedRequestsRecord) {
  auto sim = StartSim("m", "10");
  ASSERT_TRUE(sim);
  const std::string db = TempPath("sigterm.db");
  // A long flush interval: at the signal most records still wait in the writer's queue.
  auto gw = StartGateway(
      "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 10\ndrain_timeout_s: 20\n"
      "pools:\n  - {name: p, model: m, endpoints: [\"http://127.0.0.1:" +
      std::to_string(sim->port()) +
      "\"]}\n"
      "accounting:\n  ledger: {sqlite_path: " +
      db + ", flush_interval_ms: 5000}\n");
  ASSERT_TRUE(gw);
  const uint16_t port = gw->port();
  std::mutex mu;
  std::set<std::string> completed;
  std::atomic<int> started{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0;; ++i) {
        const std::string id = "term-" + std::to_string(c) + "-" + std::to_string(i);
        http::ClientRequest r;
        r.method = "POST";
        r.port = port;
        r.target = "/v1/chat/completions";
        r.body = Chat("m", id, true, 20, true);
        r.headers.Add("x-request-id", id);
        r.header_timeout_s = 60;
        started++;
        auto res = http::FetchSync(r);
        if (!res.ok() || res->status != 200) return;  // the gateway stopped taking requests
        if (res->body.find("data: [DONE]") == std::string::npos) return;
        std::lock_guard<std::mutex> lock(mu);
        completed.insert(id);
      }
    });
  }
  while (started < 64) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(::kill(gw->pid(), SIGTERM), 0);
  for (auto& t : clients) t.join();
  // Already exiting: waits up to 30 s for it, without the second SIGTERM that Stop() sends
  // (under ASan the exit, leak check included, is long enough for that signal to land after
  // the gateway's handlers are gone and kill it by the default action).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (gw->Running() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int status = gw->Stop();  // reaped: its exit status; else SIGTERM, then SIGKILL
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_FALSE(completed.empty());
  auto store = ledger::MakeSqliteStore(db, false);
  ASSERT_TRUE(store->Open().ok());
  auto records = store->Records(0, INT64_MAX, "", 1'000'000);
  ASSERT_TRUE(records.ok());
  std::set<std::string> recorded;
  for (const auto& r : *records) recorded.insert(r.request_id);
  for (const auto& id : completed) EXPECT_TRUE(recorded.count(id)) << id << " has no record";
}

}  // namespace
}  // namespace kinference::gateway

namespace kinference::gateway {
namespace {

// A hard kill loses at most the records of the requests that finished in the last
// flush_interval_ms (plus one store write): every request that completed longer ago than
// that (with a generous margin for a loaded machine) has its record. Prints the measured
// window (docs/accounting.md).
TEST(AccountingIntegrationTest, HardKillLosesOnlyTheLastFlushIntervalsRecords) {
  auto sim = StartSim("m", "50");
  ASSERT_TRUE(sim);
  const std::string db = TempPath("sigkill.db");
  constexpr int kFlushMs = 200;  // the default
  auto gw = StartGateway(
      "listen: {address: 127.0.0.1, port: 0}\ntime_scale: 50\n"
      "pools:\n  - {name: p, model: m, endpoints: [\"http://127.0.0.1:" +
      std::to_string(sim->port()) +
      "\"]}\n"
      "accounting:\n  ledger: {sqlite_path: " +
      db + ", flush_interval_ms: " + std::to_string(kFlushMs) + "}\n");
  ASSERT_TRUE(gw);
  const uint16_t port = gw->port();
  using Clock = std::chrono::steady_clock;
  std::mutex mu;
  std::map<std::string, Clock::time_point> completed;  // request id -> when its answer ended
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; !stop; ++i) {
        const std::string id = "kill-" + std::to_string(c) + "-" + std::to_string(i);
        http::ClientRequest r;
        r.method = "POST";
        r.port = port;
        r.target = "/v1/chat/completions";
        r.body = Chat("m", id, false, 3);
        r.headers.Add("x-request-id", id);
        r.header_timeout_s = 10;
        auto res = http::FetchSync(r);
        if (!res.ok() || res->status != 200) return;
        std::lock_guard<std::mutex> lock(mu);
        completed[id] = Clock::now();
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const auto killed_at = Clock::now();
  ASSERT_EQ(::kill(gw->pid(), SIGKILL), 0);
  stop = true;
  for (auto& t : clients) t.join();
  gw->Stop(5);
  auto store = ledger::MakeSqliteStore(db, false);
  ASSERT_TRUE(store->Open().ok());
  auto records = store->Records(0, INT64_MAX, "", 1'000'000);
  ASSERT_TRUE(records.ok());
  std::set<std::string> recorded;
  for (const auto& r : *records) recorded.insert(r.request_id);
  int lost = 0;
  double oldest_lost_ms = 0;
  for (const auto& [id, at] : completed) {
    if (recorded.count(id)) continue;
    ++lost;
    oldest_lost_ms =
        std::max(oldest_lost_ms, std::chrono::duration<double, std::milli>(killed_at - at).count());
  }
  std::printf(
      "hard kill: %zu requests completed, %zu recorded, %d lost, the oldest lost one "
      "completed %.0f ms before the kill (flush_interval_ms %d)\n",
      completed.size(), recorded.size(), lost, oldest_lost_ms, kFlushMs);
  EXPECT_GT(completed.size(), 20u);
  EXPECT_LE(oldest_lost_ms, kFlushMs + 1000.0);
}

}  // namespace
}  // namespace kinference::gateway
