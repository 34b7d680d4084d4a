#include "admission/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>

namespace kinference::admission {
namespace {

using Ids = std::vector<std::string>;

Waiter W(TicketId id, std::string tenant, int priority, Ids candidates, Seconds arrival = 0) {
  return Waiter{id, std::move(tenant), priority, arrival, std::move(candidates)};
}

TEST(Admission, ConfiguredLimitAdmitsUpToItThenHasNoRoom) {
  AdmissionController ac;
  ac.SetEndpoint("a/0", "a", 2);
  ac.SetEndpoint("p/openai", "p", kUnlimited);
  EXPECT_TRUE(ac.HasRoom("a/0"));
  ac.OnDispatched("a/0", "t");
  ac.OnDispatched("a/0", "t");
  EXPECT_FALSE(ac.HasRoom("a/0"));
  EXPECT_EQ(ac.InFlight("a/0"), 2);
  EXPECT_EQ(ac.WithRoom(Ids{"a/0", "p/openai"}), Ids{"p/openai"});
  ac.OnFinished("a/0", "t", 1);
  EXPECT_TRUE(ac.HasRoom("a/0"));
  for (int i = 0; i < 1000; ++i) ac.OnDispatched("p/openai", "t");
  EXPECT_TRUE(ac.HasRoom("p/openai"));
}

TEST(Admission, DerivedLimitLearnsConcurrencyFromASaturatedScrape) {
  AdmissionController ac;
  ac.SetEndpoint("a/0", "a", kDerive);
  EXPECT_EQ(ac.Limit("a/0"), kUnlimited);  // nothing learned yet
  ac.ObserveMetrics("a/0", 5, 0);
  EXPECT_EQ(ac.Limit("a/0"), kUnlimited);  // not saturated: still nothing learned
  ac.ObserveMetrics("a/0", 8, 3);
  EXPECT_EQ(ac.Limit("a/0"), 8 + 2);  // headroom at least kMinHeadroom
  ac.ObserveMetrics("a/0", 40, 5);
  EXPECT_EQ(ac.Limit("a/0"), 40 + 10);  // a quarter of the batch
  ac.ObserveMetrics("a/0", 60, 0);      // runs more than learned: raised
  EXPECT_EQ(ac.Limit("a/0"), 60 + 15);
  ac.ObserveMetrics("a/0", 10, 0);  // lightly loaded: kept
  EXPECT_EQ(ac.Limit("a/0"), 75);
  ac.ObserveMetrics("a/0", std::nan(""), 3);  // garbage ignored
  EXPECT_EQ(ac.Limit("a/0"), 75);
  // A configured limit ignores scrapes.
  ac.SetEndpoint("b/0", "b", 4);
  ac.ObserveMetrics("b/0", 100, 50);
  EXPECT_EQ(ac.Limit("b/0"), 4);
}

TEST(Admission, QueueOrderIsPriorityThenTenantFairnessThenArrival) {
  AdmissionController ac;
  ac.SetEndpoint("a/0", "a", 1);
  ac.OnDispatched("a/0", "big");  // full
  ac.OnDispatched("x/0", "big");  // "big" has 2 in flight (x/0 unknown: tenant count only)
  ASSERT_EQ(ac.Enqueue(W(1, "big", 0, {"a/0"}), 0).outcome, EnqueueOutcome::kQueued);
  ASSERT_EQ(ac.Enqueue(W(2, "big", 0, {"a/0"}), 0.1).outcome, EnqueueOutcome::kQueued);
  ASSERT_EQ(ac.Enqueue(W(3, "small", 0, {"a/0"}), 0.2).outcome, EnqueueOutcome::kQueued);
  ASSERT_EQ(ac.Enqueue(W(4, "big", 5, {"a/0"}), 0.3).outcome, EnqueueOutcome::kQueued);
  EXPECT_EQ(ac.NextAdmissible(), std::nullopt);  // no room yet
  std::vector<TicketId> order;
  auto release = [&] {
    ac.OnFinished("a/0", "big", 1);
    auto id = ac.NextAdmissible();
    ASSERT_TRUE(id.has_value());
    order.push_back(*id);
    ac.OnDispatched("a/0", *id == 3 ? "small" : "big");
    EXPECT_EQ(ac.NextAdmissible(), std::nullopt);  // one slot, one admission
  };
  for (int i = 0; i < 4; ++i) release();
  // Priority 5 first; then the tenant with fewer in flight ("small" before "big"'s older
  // waiters); then "big"'s in arrival order.
  EXPECT_EQ(order, (std::vector<TicketId>{4, 3, 1, 2}));
  EXPECT_EQ(ac.Stats("a").admitted_from_queue_total, 4u);
}

TEST(Admission, AWaiterGoesToAnyCandidateWithRoom) {
  AdmissionController ac;
  ac.SetEndpoint("a/0", "a", 1);
  ac.SetEndpoint("a/1", "a", 1);
  ac.OnDispatched("a/0", "t");
  ac.OnDispatched("a/1", "t");
  ac.Enqueue(W(1, "t", 0, {"a/0"}), 0);
  ac.Enqueue(W(2, "t", 0, {"a/1"}), 0);
  ac.OnFinished("a/1", "t", 1);
  EXPECT_EQ(ac.NextAdmissible(), std::optional<TicketId>(2));  // 1 cannot use a/1
}

TEST(Admission, FreedSlotGoesToTheWaiterItsEndpointCachesWithinTheWindow) {
  AdmissionController ac;
  ac.SetEndpoint("a/0", "a", 1);
  ac.SetEndpoint("a/1", "a", 1);
  ac.OnDispatched("a/0", "t");
  ac.OnDispatched("a/1", "t");
  for (TicketId id = 1; id <= 4; ++id) ac.Enqueue(W(id, "t", 0, {"a/0", "a/1"}, id), 0);
  // Waiter 3's prompt is cached on a/1, waiter 2's on a/0; nobody else has a hit.
  auto affinity = [](TicketId id, std::span<const std::string> room) {
    double hit = 0;
    for (const auto& e : room) {
      if (id == 3 && e == "a/1") hit = 900;
      if (id == 2 && e == "a/0") hit = 500;
    }
    return hit;
  };
  ac.OnFinished("a/1", "t", 1);
  EXPECT_EQ(ac.NextAdmissible(affinity), std::optional<TicketId>(3));
  ac.OnDispatched("a/1", "t");
  ac.OnFinished("a/0", "t", 2);
  EXPECT_EQ(ac.NextAdmissible(affinity), std::optional<TicketId>(2));
  ac.OnDispatched("a/0", "t");
  // No hit anywhere: arrival order.
  ac.OnFinished("a/0", "t", 3);
  EXPECT_EQ(ac.NextAdmissible(affinity), std::optional<TicketId>(1));
}

TEST(Admission, AffinityPassesOverTheFirstWaiterAtMostMaxPassOversTimes) {
  AdmissionController ac;
  ac.SetEndpoint("a/0", "a", 1);
  ac.OnDispatched("a/0", "t");
  // Waiter 1 has no hit; every later one has.
  const TicketId n = kMaxPassOvers + 5;
  for (TicketId id = 1; id <= n; ++id) ac.Enqueue(W(id, "t", 0, {"a/0"}, id), 0);
  auto affinity = [](TicketId id, std::span<const std::string>) { return id == 1 ? 0.0 : 1.0; };
  std::vector<TicketId> order;
  for (TicketId i = 1; i <= n; ++i) {
    ac.OnFinished("a/0", "t", i);
    auto id = ac.NextAdmissible(affinity);
    ASSERT_TRUE(id.has_value());
    order.push_back(*id);
    ac.OnDispatched("a/0", "t");
  }
  auto pos = std::find(order.begin(), order.end(), TicketId{1}) - order.begin();
  EXPECT_EQ(pos, kMaxPassOvers);  // passed over exactly kMaxPassOvers times, then admitted
  EXPECT_EQ(order.front(), 2u);   // later waiters kept their arrival order among themselves
}

TEST(Admission, AffinityNeverOvertakesPriorityOrTenantFairness) {
  AdmissionController ac;
  ac.SetEndpoint("a/0", "a", 1);
  ac.OnDispatched("a/0", "big");
  ac.OnDispatched("x/0", "big");              // "big" stays the heavier tenant
  ac.Enqueue(W(1, "big", 0, {"a/0"}, 1), 0);  // cached
  ac.Enqueue(W(2, "small", 0, {"a/0"}, 2), 0);
  ac.Enqueue(W(3, "big", 9, {"a/0"}, 3), 0);
  ac.Enqueue(W(4, "big", 9, {"a/0"}, 4), 0);  // cached, same class as 3
  auto affinity = [](TicketId id, std::span<const std::string>) {
    return id == 1 || id == 4 ? 1000.0 : 0.0;
  };
  std::vector<TicketId> order;
  for (int i = 0; i < 4; ++i) {
    ac.OnFinished("a/0", "big", i + 1);
    auto id = ac.NextAdmissible(affinity);
    ASSERT_TRUE(id.has_value());
    order.push_back(*id);
    ac.OnDispatched("a/0", *id == 2 ? "small" : "big");
  }
  // Priority 9 first (4 before 3 by affinity), then the lighter tenant, then 1.
  EXPECT_EQ(order, (std::vector<TicketId>{4, 3, 2, 1}));
}

TEST(Admission, PickByAffinityTakesTheLargestEarliestUnlessTheFirstWaitedEnough) {
  using V = std::vector<double>;
  EXPECT_EQ(PickByAffinity(V{}, V{}, 0), 0u);
  EXPECT_EQ(PickByAffinity(V{0, 0, 0}, V{0, 0, 0}, 0), 0u);
  EXPECT_EQ(PickByAffinity(V{5, 7, 7}, V{5, 7, 7}, 0), 1u);
  EXPECT_EQ(PickByAffinity(V{7, 7, 2}, V{7, 7, 2}, 0), 0u);
  EXPECT_EQ(PickByAffinity(V{0, 7}, V{0, 7}, kMaxPassOvers - 1), 1u);
  EXPECT_EQ(PickByAffinity(V{0, 7}, V{0, 7}, kMaxPassOvers), 0u);
}

TEST(Admission, PickByAffinityPrefersAWaiterNoEndpointCachesOverOneCachedElsewhere) {
  using V = std::vector<double>;
  // No hit where there is room: the earliest waiter cached nowhere goes.
  EXPECT_EQ(PickByAffinity(V{0, 0, 0}, V{9, 0, 0}, 0), 1u);
  EXPECT_EQ(PickByAffinity(V{0, 0, 0}, V{9, 9, 0}, 0), 2u);
  // Every one cached elsewhere: the order is kept.
  EXPECT_EQ(PickByAffinity(V{0, 0}, V{9, 9}, 0), 0u);
  // A hit where there is room still wins.
  EXPECT_EQ(PickByAffinity(V{0, 0, 3}, V{9, 0, 3}, 0), 2u);
  // The first waited enough: it goes even if cold here.
  EXPECT_EQ(PickByAffinity(V{0, 0}, V{9, 0}, kMaxPassOvers), 0u);
}

TEST(Admission, AWaiterCachedOnAnotherEndpointIsNotSentColdToTheFreedOneWhileAnUncachedIsQueued) {
  AdmissionController ac;
  ac.SetEndpoint("a/0", "a", 1);
  ac.SetEndpoint("a/1", "a", 1);
  ac.OnDispatched("a/0", "t");
  ac.OnDispatched("a/1", "t");
  for (TicketId id = 1; id <= 4; ++id) ac.Enqueue(W(id, "t", 0, {"a/0", "a/1"}, id), 0);
  // Waiters 1 and 2 are cached on a/1 (full); 3 and 4 nowhere.
  auto affinity = [](TicketId id, std::span<const std::string> endpoints) {
    double hit = 0;
    for (const auto& e : endpoints)
      if ((id == 1 || id == 2) && e == "a/1") hit = 900;
    return hit;
  };
  ac.OnFinished("a/0", "t", 1);
  EXPECT_EQ(ac.NextAdmissible(affinity), std::optional<TicketId>(3));
  ac.OnDispatched("a/0", "t");
  ac.OnFinished("a/0", "t", 2);
  EXPECT_EQ(ac.NextAdmissible(affinity), std::optional<TicketId>(4));
  ac.OnDispatched("a/0", "t");
  // a/1 frees: its cached waiters go there in order.
  ac.OnFinished("a/1", "t", 3);
  EXPECT_EQ(ac.NextAdmissible(affinity), std::optional<TicketId>(1));
  ac.OnDispatched("a/1", "t");
  // Only waiters cached elsewhere left and a/0 frees: the order is kept (the slot is used).
  ac.OnFinished("a/0", "t", 4);
  EXPECT_EQ(ac.NextAdmissible(affinity), std::optional<TicketId>(2));
}

TEST(Admission, FullQueueShedsALowerPriorityWaiterOrRefusesTheArrival) {
  AdmissionController ac(Options{.max_queue = 2});
  ac.SetEndpoint("a/0", "a", 1);
  ac.OnDispatched("a/0", "t");
  EXPECT_EQ(ac.Enqueue(W(1, "t", 1, {"a/0"}), 0).outcome, EnqueueOutcome::kQueued);
  EXPECT_EQ(ac.Enqueue(W(2, "t", 0, {"a/0"}), 0).outcome, EnqueueOutcome::kQueued);
  auto r = ac.Enqueue(W(3, "t", 0, {"a/0"}), 0);  // equal priority: refused
  EXPECT_EQ(r.outcome, EnqueueOutcome::kRefused);
  EXPECT_FALSE(r.evicted.has_value());
  r = ac.Enqueue(W(4, "t", 2, {"a/0"}), 0);  // outranks 2: 2 is shed
  EXPECT_EQ(r.outcome, EnqueueOutcome::kQueued);
  EXPECT_EQ(r.evicted, std::optional<TicketId>(2));
  EXPECT_EQ(ac.waiting(), 2u);
  auto stats = ac.Stats("a");
  EXPECT_EQ(stats.refused_queue_full_total, 1u);
  EXPECT_EQ(stats.evicted_total, 1u);
  EXPECT_EQ(stats.waiting, 2u);
}

TEST(Admission, WaitersExpireAtTheirDeadlineAndCancelledOnesLeave) {
  AdmissionController ac(Options{.queue_timeout_s = 5});
  ac.SetEndpoint("a/0", "a", 1);
  ac.OnDispatched("a/0", "t");
  ac.Enqueue(W(1, "t", 0, {"a/0"}), 10);
  ac.Enqueue(W(2, "t", 0, {"a/0"}), 12);
  ac.Enqueue(W(3, "t", 0, {"a/0"}), 13);
  EXPECT_EQ(ac.NextDeadline(), std::optional<Seconds>(15));
  ac.Cancel(3);
  EXPECT_TRUE(ac.Expired(14.9).empty());
  EXPECT_EQ(ac.Expired(15), std::vector<TicketId>{1});
  EXPECT_EQ(ac.NextDeadline(), std::optional<Seconds>(17));
  EXPECT_EQ(ac.Expired(100), std::vector<TicketId>{2});
  EXPECT_EQ(ac.waiting(), 0u);
  EXPECT_EQ(ac.Stats("a").refused_timeout_total, 2u);
}

TEST(Admission, RetryAfterIsTheQueueAheadOverTheRecentCompletionRate) {
  AdmissionController ac(Options{.rate_window_s = 30});
  ac.SetEndpoint("a/0", "a", 1);
  EXPECT_EQ(ac.RetryAfterS("a", 100), 60);  // nothing completed: the longest
  for (int i = 0; i < 15; ++i) {
    ac.OnDispatched("a/0", "t");
    ac.OnFinished("a/0", "t", 90 + i * 0.5);
  }
  // 15 completions in the last 30 s: 0.5/s; one ahead plus this one: 4 s.
  ac.OnDispatched("a/0", "t");
  ac.Enqueue(W(1, "t", 0, {"a/0"}), 100);
  EXPECT_EQ(ac.RetryAfterS("a", 100), 4);
  // Old completions fall out of the window.
  EXPECT_EQ(ac.RetryAfterS("a", 200), 60);
}

}  // namespace
}  // namespace kinference::admission
