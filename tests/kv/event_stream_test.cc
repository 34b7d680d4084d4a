#include "kv/event_stream.h"

#include <gtest/gtest.h>

namespace kinference::kv {
namespace {

std::vector<uint64_t> Seqs(const StreamStep& s) {
  std::vector<uint64_t> out;
  for (const auto& [seq, payload] : s.apply) {
    EXPECT_EQ(payload, "p" + std::to_string(seq));
    out.push_back(seq);
  }
  return out;
}

std::string P(uint64_t seq) { return "p" + std::to_string(seq); }

TEST(EventStreamTest, AppliesInOrderFromZero) {
  EventStream s;
  for (uint64_t i = 0; i < 3; ++i) {
    StreamStep st = s.OnLive(i, P(i));
    EXPECT_EQ(Seqs(st), std::vector<uint64_t>{i});
    EXPECT_FALSE(st.clear);
    EXPECT_FALSE(st.replay_from);
  }
  EXPECT_EQ(s.counters().applied, 3u);
  EXPECT_EQ(s.counters().gaps, 0u);
}

TEST(EventStreamTest, GapIsFilledByReplayThenHeldBatchesApply) {
  EventStream s;
  s.OnLive(0, P(0));
  StreamStep gap = s.OnLive(3, P(3));  // 1 and 2 were dropped
  EXPECT_TRUE(gap.apply.empty());
  ASSERT_TRUE(gap.replay_from);
  EXPECT_EQ(*gap.replay_from, 1u);
  EXPECT_TRUE(s.OnLive(4, P(4)).apply.empty());  // held while replaying
  EXPECT_EQ(Seqs(s.OnReplayed(1, P(1))), std::vector<uint64_t>{1});
  EXPECT_EQ(Seqs(s.OnReplayed(2, P(2))), std::vector<uint64_t>{2});
  EXPECT_EQ(Seqs(s.OnReplayed(3, P(3))), std::vector<uint64_t>{3});
  StreamStep end = s.OnReplayEnd(true);
  EXPECT_EQ(Seqs(end), std::vector<uint64_t>{4});
  EXPECT_FALSE(end.clear);
  EXPECT_EQ(Seqs(s.OnLive(5, P(5))), std::vector<uint64_t>{5});
  EXPECT_EQ(s.counters().gaps, 1u);
  EXPECT_EQ(s.counters().replayed, 3u);
  EXPECT_EQ(s.counters().resyncs, 0u);
}

TEST(EventStreamTest, ReplayThatNoLongerReachesBackClearsTheIndex) {
  EventStream s;
  s.OnLive(0, P(0));
  s.OnLive(5, P(5));
  StreamStep st = s.OnReplayed(3, P(3));  // buffer starts at 3: 1 and 2 are lost
  EXPECT_TRUE(st.clear);
  EXPECT_EQ(Seqs(st), std::vector<uint64_t>{3});
  EXPECT_EQ(Seqs(s.OnReplayed(4, P(4))), std::vector<uint64_t>{4});
  EXPECT_EQ(Seqs(s.OnReplayEnd(true)), std::vector<uint64_t>{5});
  EXPECT_EQ(s.counters().resyncs, 1u);
}

TEST(EventStreamTest, ReplayWithoutAnswerResynchronisesFromHeldBatches) {
  EventStream s;
  s.OnLive(0, P(0));
  s.OnLive(2, P(2));
  s.OnLive(3, P(3));
  StreamStep st = s.OnReplayEnd(/*answered=*/false);  // timeout: nothing replayed
  EXPECT_TRUE(st.clear);
  EXPECT_EQ(Seqs(st), (std::vector<uint64_t>{2, 3}));
  EXPECT_FALSE(s.replaying());
}

TEST(EventStreamTest, RestartedPublisherClearsAndStartsOver) {
  EventStream s;
  for (uint64_t i = 0; i < 5; ++i) s.OnLive(i, P(i));
  StreamStep st = s.OnLive(0, P(0));
  EXPECT_TRUE(st.clear);
  EXPECT_EQ(Seqs(st), std::vector<uint64_t>{0});
  EXPECT_EQ(s.counters().restarts, 1u);
  EXPECT_EQ(Seqs(s.OnLive(1, P(1))), std::vector<uint64_t>{1});
}

TEST(EventStreamTest, RestartSeenMidStreamReplaysFromZero) {
  EventStream s;
  for (uint64_t i = 0; i < 10; ++i) s.OnLive(i, P(i));
  StreamStep st = s.OnLive(2, P(2));  // new process; its 0 and 1 were missed
  EXPECT_TRUE(st.clear);
  ASSERT_TRUE(st.replay_from);
  EXPECT_EQ(*st.replay_from, 0u);
  EXPECT_EQ(Seqs(s.OnReplayed(0, P(0))), std::vector<uint64_t>{0});
  EXPECT_EQ(Seqs(s.OnReplayed(1, P(1))), std::vector<uint64_t>{1});
  EXPECT_EQ(Seqs(s.OnReplayed(2, P(2))), std::vector<uint64_t>{2});
  StreamStep end = s.OnReplayEnd(true);
  EXPECT_TRUE(end.apply.empty());  // the held 2 was replayed already
  EXPECT_FALSE(end.clear);
  EXPECT_EQ(s.counters().duplicates, 1u);
}

TEST(EventStreamTest, JoiningMidStreamAsksForEverythingBuffered) {
  EventStream s;
  StreamStep st = s.OnLive(7, P(7));
  ASSERT_TRUE(st.replay_from);
  EXPECT_EQ(*st.replay_from, 0u);
  for (uint64_t i = 0; i <= 7; ++i)
    EXPECT_EQ(Seqs(s.OnReplayed(i, P(i))), std::vector<uint64_t>{i});
  EXPECT_TRUE(s.OnReplayEnd(true).apply.empty());
  EXPECT_EQ(*s.expected(), 8u);
}

TEST(EventStreamTest, JoinReplaysTheHistoryBeforeAnyLiveBatch) {
  EventStream s;
  StreamStep join = s.Join();
  ASSERT_TRUE(join.replay_from);
  EXPECT_EQ(*join.replay_from, 0u);
  EXPECT_FALSE(s.Join().replay_from);            // already replaying
  EXPECT_TRUE(s.OnLive(2, P(2)).apply.empty());  // held
  EXPECT_EQ(Seqs(s.OnReplayed(0, P(0))), std::vector<uint64_t>{0});
  EXPECT_EQ(Seqs(s.OnReplayed(1, P(1))), std::vector<uint64_t>{1});
  EXPECT_EQ(Seqs(s.OnReplayEnd(true)), std::vector<uint64_t>{2});
  EXPECT_EQ(s.counters().gaps, 0u);
  EXPECT_EQ(s.counters().resyncs, 0u);
  EXPECT_FALSE(s.Join().replay_from);  // started: no-op
}

TEST(EventStreamTest, JoinOnAnEmptyBufferIsSyncedAndWaitsForSequenceZero) {
  EventStream s;
  s.Join();
  StreamStep end = s.OnReplayEnd(/*answered=*/true);
  EXPECT_TRUE(end.apply.empty());
  EXPECT_FALSE(end.clear);
  EXPECT_TRUE(end.synced);  // the publisher has nothing: the empty index is exact
  EXPECT_EQ(Seqs(s.OnLive(0, P(0))), std::vector<uint64_t>{0});
  EXPECT_EQ(s.counters().gaps, 0u);
}

TEST(EventStreamTest, JoinWithoutAnAnswerIsNotSynced) {
  EventStream s;
  s.Join();
  StreamStep end = s.OnReplayEnd(/*answered=*/false);  // timed out
  EXPECT_TRUE(end.apply.empty());
  EXPECT_FALSE(end.synced);
  EXPECT_FALSE(s.OnReplayEnd(true).synced);  // a late end marker: no replay is running
}

TEST(EventStreamTest, TooManyHeldBatchesAbandonTheReplay) {
  EventStream s(/*max_held=*/2);
  s.OnLive(0, P(0));
  s.OnLive(2, P(2));
  s.OnLive(3, P(3));
  StreamStep st = s.OnLive(4, P(4));
  EXPECT_FALSE(s.replaying());
  EXPECT_TRUE(st.clear);
  EXPECT_EQ(Seqs(st), (std::vector<uint64_t>{2, 3, 4}));
  EXPECT_TRUE(s.OnReplayed(1, P(1)).apply.empty());  // a late replay is ignored
}

}  // namespace
}  // namespace kinference::kv
