// Budgets and rate limits decided alike by the local limiter and by the Redis limiter
// (a real redis-server started by the test), replicas sharing Redis never admitting
// beyond a limit together, and the fail-open / fail-closed behaviour when Redis is down.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>

#include "accounting/calendar.h"
#include "accounting/limits.h"
#include "ledger/redis_limiter.h"
#include "ledger_test_util.h"
#include "testing/services.h"

namespace kinference::ledger {
namespace {

using testutil::SharedRedis;

using accounting::Admission;
using accounting::Amounts;
using accounting::LimitKind;
using accounting::Reservation;
using accounting::TenantLimits;

const double kNoon = *accounting::ParseTime("2025-03-10T12:00:00Z");

accounting::RedisConfig ConfigFor(uint16_t port, const std::string& prefix) {
  accounting::RedisConfig c;
  c.host = "127.0.0.1";
  c.port = port;
  c.timeout_ms = 500;
  c.key_prefix = prefix;
  return c;
}

// Its worker threads (RedisLimiter's default): tenants spread over two workers.
constexpr int kRedisWorkers = 2;

// Done callbacks run on the worker that decided (post runs them at once).
std::unique_ptr<RedisLimiter> MakeRedis(uint16_t port, const std::string& prefix) {
  return std::make_unique<RedisLimiter>(
      ConfigFor(port, prefix), 60.0, [](std::function<void()> f) { f(); }, kRedisWorkers);
}

struct Decision {
  Admission admission;
  std::optional<Reservation> reservation;
};

Decision Ask(accounting::Limiter& lim, const TenantLimits& l, Amounts est, double now,
             const std::string& id = "r", const std::string& tenant = "acme") {
  std::promise<Decision> p;
  lim.Reserve(tenant, l, est, id, now, [&](Admission a, std::optional<Reservation> r) {
    p.set_value({std::move(a), std::move(r)});
  });
  return p.get_future().get();
}

// The same cases on both limiters. A settlement is not waited for: the Redis limiter runs
// a tenant's jobs in the order they were queued, so the next reservation of the tenant
// sees it applied, as the local limiter's does.
class LimiterConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "local") {
      limiter_ = std::make_unique<accounting::LocalLimiter>();
    } else {
      auto* redis = SharedRedis();
      ASSERT_NE(redis, nullptr);
      limiter_ = MakeRedis(redis->port(), "t" + std::to_string(counter_++) + ":");
    }
  }
  static inline int counter_ = 0;
  std::unique_ptr<accounting::Limiter> limiter_;
};

TEST_P(LimiterConformance, RequestBucketRefusesWhenEmptyAndRefills) {
  TenantLimits l{.requests_per_minute = 3};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Ask(*limiter_, l, {}, kNoon).admission.admitted);
  Decision d = Ask(*limiter_, l, {}, kNoon);
  EXPECT_FALSE(d.admission.admitted);
  EXPECT_EQ(d.admission.exceeded, LimitKind::kRequests);
  EXPECT_NEAR(d.admission.retry_after_s, 20.0, 1e-6);
  EXPECT_FALSE(d.reservation.has_value());
  EXPECT_TRUE(Ask(*limiter_, l, {}, kNoon + 20).admission.admitted);
}

TEST_P(LimiterConformance, TokenReservationsAreSettledWithRealUsage) {
  TenantLimits l{.input_tokens_per_minute = 1000, .output_tokens_per_minute = 500};
  Decision a = Ask(*limiter_, l, {.input_tokens = 800, .output_tokens = 100}, kNoon);
  ASSERT_TRUE(a.admission.admitted);
  ASSERT_TRUE(a.reservation.has_value());
  EXPECT_EQ(a.admission.states[0].remaining, 200);  // input
  Decision b = Ask(*limiter_, l, {.input_tokens = 800, .output_tokens = 100}, kNoon);
  EXPECT_FALSE(b.admission.admitted);
  EXPECT_EQ(b.admission.exceeded, LimitKind::kInputTokens);
  EXPECT_NEAR(b.admission.retry_after_s, 36.0, 1e-6);  // 600 tokens at 1000/60 per s
  // 700 of the 800 prompt tokens were cache hits: 100 count.
  limiter_->Settle(*a.reservation, {.input_tokens = 100, .output_tokens = 50}, kNoon);
  Decision c = Ask(*limiter_, l, {.input_tokens = 800, .output_tokens = 100}, kNoon);
  ASSERT_TRUE(c.admission.admitted);
  EXPECT_EQ(c.admission.states[0].remaining, 100);
  EXPECT_EQ(c.admission.states[1].remaining, 350);
}

TEST_P(LimiterConformance, ConcurrencySlotsAreHeldUntilSettled) {
  TenantLimits l{.max_concurrent_requests = 2};
  Decision a = Ask(*limiter_, l, {}, kNoon, "a");
  Decision b = Ask(*limiter_, l, {}, kNoon, "b");
  ASSERT_TRUE(a.admission.admitted && b.admission.admitted);
  Decision c = Ask(*limiter_, l, {}, kNoon, "c");
  EXPECT_FALSE(c.admission.admitted);
  EXPECT_EQ(c.admission.exceeded, LimitKind::kConcurrent);
  limiter_->Settle(*a.reservation, {}, kNoon);
  EXPECT_TRUE(Ask(*limiter_, l, {}, kNoon, "d").admission.admitted);
}

TEST_P(LimiterConformance, SpendBudgetsHoldPerUtcDay) {
  TenantLimits l{.spend_per_day = 1000};
  Decision a = Ask(*limiter_, l, {.cost = 700}, kNoon);
  ASSERT_TRUE(a.admission.admitted);
  Decision b = Ask(*limiter_, l, {.cost = 400}, kNoon);
  EXPECT_FALSE(b.admission.admitted);
  EXPECT_EQ(b.admission.exceeded, LimitKind::kSpendDay);
  EXPECT_NEAR(b.admission.retry_after_s, 12 * 3600.0, 1e-6);
  limiter_->Settle(*a.reservation, {.cost = 500}, kNoon);
  EXPECT_TRUE(Ask(*limiter_, l, {.cost = 400}, kNoon).admission.admitted);
  EXPECT_TRUE(Ask(*limiter_, l, {.cost = 1000}, kNoon + 12 * 3600).admission.admitted);
}

// A client sending one request at a time under max_concurrent_requests 1: each
// reservation follows the previous request's settlement (not waited for: the gateway
// settles and then reads the client's next request), and must see that slot free. The
// Redis limiter runs a tenant's jobs in the order they were queued (one worker per
// tenant), so none is refused.
TEST_P(LimiterConformance, SequentialClientUnderOneConcurrentSlotIsNeverRefused) {
  TenantLimits l{.max_concurrent_requests = 1};
  constexpr int kRequests = 300;
  int refused = 0;
  for (int i = 0; i < kRequests; ++i) {
    Decision d = Ask(*limiter_, l, {}, kNoon, "seq" + std::to_string(i));
    if (!d.admission.admitted || !d.reservation) {
      ++refused;
      continue;
    }
    limiter_->Settle(*d.reservation, {}, kNoon);
  }
  EXPECT_EQ(refused, 0) << "of " << kRequests;
}

INSTANTIATE_TEST_SUITE_P(Limiters, LimiterConformance, ::testing::Values("local", "redis"),
                         [](const auto& info) { return info.param; });

TEST(RedisLimiter, ReplicasSharingRedisNeverAdmitBeyondTheLimitTogether) {
  auto* redis = SharedRedis();
  ASSERT_NE(redis, nullptr);
  auto a = MakeRedis(redis->port(), "replicas:");
  auto b = MakeRedis(redis->port(), "replicas:");
  TenantLimits l{.input_tokens_per_minute = 5000};
  std::atomic<int> admitted{0}, refused{0};
  std::vector<std::thread> threads;
  const double now = kNoon;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      accounting::Limiter& lim = t % 2 ? *a : *b;
      for (int i = 0; i < 25; ++i) {
        Decision d = Ask(lim, l, {.input_tokens = 100}, now, "r" + std::to_string(t * 100 + i));
        (d.admission.admitted ? admitted : refused)++;
      }
    });
  for (auto& th : threads) th.join();
  // The same instant for all: exactly the 5000 tokens' worth, no more, no fewer.
  EXPECT_EQ(admitted.load(), 50);
  EXPECT_EQ(refused.load(), 150);
}

TEST(RedisLimiter, UnreachableRedisLetsEachTenantFailOpenOrClosed) {
  const uint16_t port = testing::FreePort();  // nothing listens there
  auto lim = MakeRedis(port, "down:");
  TenantLimits open{.requests_per_minute = 1,
                    .on_unavailable = accounting::OnUnavailable::kFailOpen};
  TenantLimits closed{.requests_per_minute = 1,
                      .on_unavailable = accounting::OnUnavailable::kFailClosed};
  for (int i = 0; i < 3; ++i) {
    Decision o = Ask(*lim, open, {}, kNoon);
    EXPECT_TRUE(o.admission.admitted);
    EXPECT_TRUE(o.admission.unavailable);
    EXPECT_FALSE(o.reservation.has_value());
    Decision c = Ask(*lim, closed, {}, kNoon);
    EXPECT_FALSE(c.admission.admitted);
    EXPECT_TRUE(c.admission.unavailable);
  }
  EXPECT_GE(lim->stats().unavailable, 6u);
  EXPECT_FALSE(lim->stats().up);
}

TEST(RedisLimiter, RecoversWhenRedisComesBack) {
  std::string error;
  auto redis = testing::RedisServer::Start(&error);
  ASSERT_TRUE(redis) << error;
  auto lim = MakeRedis(redis->port(), "back:");
  TenantLimits l{.requests_per_minute = 100,
                 .on_unavailable = accounting::OnUnavailable::kFailClosed};
  EXPECT_TRUE(Ask(*lim, l, {}, kNoon).admission.admitted);
  redis->Stop();
  Decision down = Ask(*lim, l, {}, kNoon);
  EXPECT_FALSE(down.admission.admitted);
  EXPECT_TRUE(down.admission.unavailable);
  ASSERT_TRUE(redis->Restart(&error)) << error;
  // After the 1 s pause the limiter reconnects (and reloads its scripts: a restarted
  // Redis without persistence has lost them).
  bool admitted = false;
  for (int i = 0; i < 100 && !admitted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Decision d = Ask(*lim, l, {}, kNoon);
    admitted = d.admission.admitted && !d.admission.unavailable;
  }
  EXPECT_TRUE(admitted);
  EXPECT_TRUE(lim->stats().up);
}

}  // namespace
}  // namespace kinference::ledger
