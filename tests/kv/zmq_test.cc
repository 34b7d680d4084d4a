// Publisher and subscriber over loopback ZeroMQ: order, gap recovery through the replay
// socket, a restarted publisher, a payload that does not decode.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "kv/zmq/publisher.h"
#include "kv/zmq/subscriber.h"

namespace kinference::kv {
namespace {

using namespace std::chrono_literals;

// What the sink saw: "C" for a clear, else the batch's ts (its number here).
class Log {
 public:
  SubscriberSink Sink() {
    return SubscriberSink{[this](bool clear, std::vector<EventBatch> batches) {
                            std::lock_guard<std::mutex> l(mu_);
                            if (clear) entries_.push_back("C");
                            for (const auto& b : batches)
                              entries_.push_back(std::to_string(static_cast<int>(b.ts)));
                            cv_.notify_all();
                          },
                          [this](bool live, const std::string& reason) {
                            std::lock_guard<std::mutex> l(mu_);
                            states_.push_back(live ? "live" : "down:" + reason);
                            cv_.notify_all();
                          }};
  }
  // Waits (generously: the machine is shared) until `pred` holds.
  template <typename P>
  bool WaitFor(P pred, std::chrono::milliseconds timeout = 60s) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return pred(entries_, states_); });
  }
  std::vector<std::string> entries() {
    std::lock_guard<std::mutex> l(mu_);
    return entries_;
  }
  std::vector<std::string> states() {
    std::lock_guard<std::mutex> l(mu_);
    return states_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> entries_, states_;
};

EventBatch Batch(int n) {
  EventBatch b;
  b.ts = n;
  BlockStored s;
  s.block_hashes = {static_cast<uint64_t>(n) + (1ULL << 63)};
  s.token_ids = {1, 2};
  s.block_size = 2;
  s.medium = "GPU";
  b.events.push_back(s);
  return b;
}

// The numbers after the last clear.
std::vector<std::string> SinceLastClear(const std::vector<std::string>& e) {
  auto it = std::find(e.rbegin(), e.rend(), "C");
  return std::vector<std::string>(it.base(), e.end());
}

std::vector<std::string> Numbers(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(std::to_string(i));
  return out;
}

TEST(ZmqKvEventsTest, SubscriberGetsEveryBatchInOrderEvenIfItJoinsLate) {
  auto pub = ZmqPublisher::Start({});
  ASSERT_TRUE(pub.ok()) << pub.status().message();
  // Published before anyone subscribes: PUB drops them; the replay socket has them.
  for (int i = 0; i < 3; ++i) (*pub)->Publish(Batch(i));
  Log log;
  auto sub =
      ZmqSubscriber::Start({(*pub)->endpoint(), (*pub)->replay_endpoint(), "kv"}, log.Sink());
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  // Keep publishing until the subscription is up and a batch arrives live.
  int n = 3;
  while (!log.WaitFor([](auto& e, auto&) { return !e.empty(); }, 200ms) && n < 500) {
    (*pub)->Publish(Batch(n++));
  }
  for (int i = 0; i < 20; ++i) {
    (*pub)->Publish(Batch(n++));
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(log.WaitFor([&](auto& e, auto&) { return SinceLastClear(e) == Numbers(0, n); }))
      << ::testing::PrintToString(log.entries());
  EXPECT_TRUE((*sub)->live());
}

// vLLM publishes only when blocks are stored or removed: an engine that has cached nothing
// has sent nothing, and its replay answers with the end marker alone. The feed is live then
// (its empty index is exact), not only after the engine's first batch.
TEST(ZmqKvEventsTest, IdlePublishersFeedIsLiveWithAnEmptyIndex) {
  auto pub = ZmqPublisher::Start({});
  ASSERT_TRUE(pub.ok()) << pub.status().message();
  Log log;
  auto sub =
      ZmqSubscriber::Start({(*pub)->endpoint(), (*pub)->replay_endpoint(), "kv"}, log.Sink());
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  ASSERT_TRUE(log.WaitFor([](auto&, auto& s) { return !s.empty(); }))
      << ::testing::PrintToString(log.states());
  EXPECT_EQ(log.states(), std::vector<std::string>{"live"});
  EXPECT_TRUE(log.entries().empty());
  EXPECT_TRUE((*sub)->live());
  EXPECT_EQ((*sub)->counters().replay_timeouts, 0u);
  // The engine's first batch (sequence 0) follows on the live socket, or, if the
  // subscription was not yet in place when it was sent, through a replay.
  int n = 0;
  do {
    (*pub)->Publish(Batch(n++));
  } while (!log.WaitFor([](auto& e, auto&) { return !e.empty(); }, 200ms) && n < 500);
  ASSERT_TRUE(log.WaitFor([&](auto& e, auto&) { return SinceLastClear(e) == Numbers(0, n); }))
      << ::testing::PrintToString(log.entries());
  EXPECT_EQ(log.states(), std::vector<std::string>{"live"});
}

TEST(ZmqKvEventsTest, GapIsFilledFromTheReplaySocket) {
  auto pub = ZmqPublisher::Start({});
  ASSERT_TRUE(pub.ok());
  Log log;
  auto sub =
      ZmqSubscriber::Start({(*pub)->endpoint(), (*pub)->replay_endpoint(), "kv"}, log.Sink());
  ASSERT_TRUE(sub.ok());
  int n = 0;
  do {
    (*pub)->Publish(Batch(n++));
  } while (!log.WaitFor([](auto& e, auto&) { return !e.empty(); }, 200ms) && n < 500);
  (*pub)->DropNextForTest();
  (*pub)->Publish(Batch(n++));  // lost on the way
  (*pub)->Publish(Batch(n++));  // arrives: the subscriber sees the jump
  ASSERT_TRUE(log.WaitFor([&](auto& e, auto&) { return SinceLastClear(e) == Numbers(0, n); }))
      << ::testing::PrintToString(log.entries());
  EXPECT_GE((*sub)->counters().gaps, 1u);
  EXPECT_GE((*sub)->counters().replayed, 1u);
}

TEST(ZmqKvEventsTest, RestartedPublisherIsACleanSlate) {
  auto pub = ZmqPublisher::Start({});
  ASSERT_TRUE(pub.ok());
  const std::string ep = (*pub)->endpoint(), replay = (*pub)->replay_endpoint();
  Log log;
  auto sub = ZmqSubscriber::Start({ep, replay, "kv"}, log.Sink());
  ASSERT_TRUE(sub.ok());
  int n = 0;
  do {
    (*pub)->Publish(Batch(n++));
  } while (!log.WaitFor([](auto&, auto& s) { return !s.empty() && s.back() == "live"; }, 200ms) &&
           n < 500);
  pub->reset();  // the engine dies
  ASSERT_TRUE(
      log.WaitFor([](auto&, auto& s) { return s.back() == "down:publisher disconnected"; }));
  EXPECT_FALSE((*sub)->live());
  EXPECT_EQ(log.entries().back(), "C");

  auto again = ZmqPublisher::Start({ep, replay, "kv"});  // same addresses, sequence from 0
  ASSERT_TRUE(again.ok()) << again.status().message();
  int m = 100;
  do {
    (*again)->Publish(Batch(m++));
  } while (!log.WaitFor([](auto&, auto& s) { return s.back() == "live"; }, 200ms) && m < 600);
  ASSERT_TRUE(log.WaitFor([&](auto& e, auto&) { return SinceLastClear(e) == Numbers(100, m); }))
      << ::testing::PrintToString(log.entries());
}

TEST(ZmqKvEventsTest, UndecodablePayloadTakesTheFeedDownUntilAGoodOne) {
  zmq::context_t ctx;
  zmq::socket_t pub(ctx, zmq::socket_type::pub);
  pub.set(zmq::sockopt::linger, 0);
  pub.bind("tcp://127.0.0.1:*");
  Log log;
  auto sub = ZmqSubscriber::Start({pub.get(zmq::sockopt::last_endpoint), "", "kv"}, log.Sink());
  ASSERT_TRUE(sub.ok());
  auto send = [&](uint64_t seq, const std::string& payload) {
    std::array<char, 8> be{};
    for (int i = 7; i >= 0; --i, seq >>= 8) be[i] = static_cast<char>(seq & 0xff);
    std::array<zmq::const_buffer, 3> parts = {zmq::buffer(std::string_view("kv")), zmq::buffer(be),
                                              zmq::buffer(payload)};
    zmq::send_multipart(pub, parts);
  };
  uint64_t seq = 0;
  do {
    send(seq++, EncodeBatch(Batch(1)));
  } while (!log.WaitFor([](auto&, auto& s) { return !s.empty(); }, 200ms) && seq < 500);
  // The subscription may have missed the first ones: no replay socket, so it starts
  // from what it saw. Now a payload that is not msgpack.
  send(seq++, "\xc1 not msgpack");
  ASSERT_TRUE(log.WaitFor([](auto&, auto& s) {
    return s.back().rfind("down:decoder failed", 0) == 0;
  })) << ::testing::PrintToString(log.states());
  EXPECT_GE((*sub)->counters().decode_errors, 1u);
  send(seq++, EncodeBatch(Batch(7)));
  ASSERT_TRUE(log.WaitFor([](auto& e, auto& s) { return s.back() == "live" && e.back() == "7"; }));
}

}  // namespace
}  // namespace kinference::kv
