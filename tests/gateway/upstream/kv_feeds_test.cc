// The gateway's KV-event feeds (upstream/kv_feeds.h): publishers discovered from engine-sim's
// /kv_event_sources or configured, the precise prefix index used for routing (with the hit
// it predicted equal to the cached tokens the engine reports), blocks cached by traffic the
// gateway never saw, a dead publisher falling back visibly, a restarted engine seen as an
// empty cache, and a gap refilled from the replay socket.
// Real engine-sim processes on loopback; the gateway in process (gateway_harness.h).
// Assertions wait for states (generous timeouts), never on wall-clock times.
#include "gateway/upstream/kv_feeds.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <thread>

#include "common/tokenizer.h"
#include "fake_upstream.h"
#include "gateway_harness.h"
#include "kv/block_hash.h"
#include "kv/zmq/publisher.h"
#include "testing/launch.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::ChildProcess;
using kinference::testing::LaunchKinference;

constexpr const char* kModel = "kv-model";

TEST(ParseKvEventSourcesTest, ReadsVllmsShapeAndReplacesAWildcardHost) {
  // vLLM 0.32's GET /kv_event_sources: {"<dp rank>": KVEventsConfig}.
  auto s = ParseKvEventSources(
      R"({"0":{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557",)"
      R"("replay_endpoint":"tcp://*:5558","buffer_steps":10000,"hwm":100000,)"
      R"("max_queue_size":100000,"topic":"kv"}})",
      "10.1.2.3");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->endpoint, "tcp://10.1.2.3:5557");
  EXPECT_EQ(s->replay_endpoint, "tcp://10.1.2.3:5558");
  EXPECT_EQ(s->topic, "kv");
  auto concrete =
      ParseKvEventSources(R"({"0":{"enable_kv_cache_events":true,"endpoint":"tcp://127.0.0.9:7",)"
                          R"("replay_endpoint":null,"topic":""}})",
                          "10.1.2.3");
  ASSERT_TRUE(concrete.ok());
  EXPECT_EQ(concrete->endpoint, "tcp://127.0.0.9:7");
  EXPECT_EQ(concrete->replay_endpoint, "");
}

TEST(ParseKvEventSourcesTest, NoPublisherIsNotFoundAndGarbageIsInvalid) {
  EXPECT_EQ(ParseKvEventSources("{}", "h").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(ParseKvEventSources(R"({"0":{"enable_kv_cache_events":false}})", "h").status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(ParseKvEventSources("[1]", "h").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseKvEventSources(R"({"0":{"endpoint":"ipc:///x"}})", "h").status().code(),
            ErrorCode::kInvalidArgument);
}

// "tcp://127.0.0.1:P" for a port that was free a moment ago.
std::string FreeTcp() { return "tcp://127.0.0.1:" + std::to_string(gateway::testing::DeadPort()); }

std::unique_ptr<ChildProcess> StartSim(uint16_t http_port, const std::string& pub,
                                       const std::string& replay) {
  std::string config = R"({"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": ")" +
                       pub + R"(", "replay_endpoint": ")" + replay + R"(", "topic": "kv"})";
  return LaunchKinference({"engine-sim", "--port", std::to_string(http_port), "--time-scale", "50",
                           "--served-model-name", kModel, "--kv-events-config", config});
}

std::string ChatBody(const std::string& content) {
  return json::serialize(
      json::object{{"model", kModel},
                   {"messages", json::array{json::object{{"role", "user"}, {"content", content}}}},
                   {"max_tokens", 4}});
}

class KvFeedsGatewayTest : public gateway::testing::GatewayHarness {
 protected:
  // Waits up to 60 s for pred(); false on timeout.
  bool WaitFor(const std::function<bool()>& pred) {
    for (int i = 0; i < 600; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  double Series(const std::string& name, const std::string& endpoint) {
    return Metric(name + "{endpoint=\"" + endpoint + "\"}");
  }
  static int CachedTokens(const http::Response& r) {
    auto v = json::parse(r.body);
    return static_cast<int>(
        v.at("usage").at("prompt_tokens_details").at("cached_tokens").to_number<int64_t>());
  }
  static http::Response Direct(uint16_t port, const std::string& body) {
    http::ClientRequest r;
    r.port = port;
    r.target = "/v1/chat/completions";
    r.body = body;
    r.header_timeout_s = 60;
    auto res = http::FetchSync(r);
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? *res : http::Response{};
  }
  gateway::testing::FakeUpstream& AddFake() {
    fakes_.push_back(std::make_unique<gateway::testing::FakeUpstream>(
        io(), gateway::testing::FakeMode::kOk));
    gateway::testing::FakeUpstream* fake = fakes_.back().get();
    OnStop([fake] { fake->Stop(); });
    return *fake;
  }
  std::vector<std::unique_ptr<gateway::testing::FakeUpstream>> fakes_;

  GatewayConfig Config(const std::vector<uint16_t>& ports) {
    GatewayConfig c;
    c.scrape_interval_s = 0.5;
    PoolConfig pool;
    pool.name = "sim";
    pool.model = kModel;
    for (uint16_t p : ports) {
      pool.endpoints.push_back(
          ParseEndpointUrl("http://127.0.0.1:" + std::to_string(p), "endpoints[]"));
    }
    pool.kv_events = KvEventsConfig{.tokenizer = "engine-sim"};  // discovered publishers
    c.pools.push_back(pool);
    return c;
  }
};

TEST_F(KvFeedsGatewayTest, RoutesWithThePreciseIndexOnBlocksOtherTrafficCached) {
  std::vector<std::unique_ptr<ChildProcess>> sims;
  std::vector<uint16_t> ports;
  for (int i = 0; i < 2; ++i) {
    sims.push_back(StartSim(0, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"));
    ASSERT_TRUE(sims.back());
    ports.push_back(sims.back()->port());
  }
  Start(Config(ports));
  // Traffic the gateway never sees (another gateway replica's) fills sim/1's cache: a
  // 2,000-token prompt, 125 blocks of engine-sim's block size 16.
  const std::string prefix = SyntheticText(/*seed=*/77, 2000);
  ASSERT_EQ(Direct(ports[1], ChatBody(prefix)).status, 200);
  ASSERT_TRUE(WaitFor([&] { return Series("kinference_kv_index_blocks", "sim/1") >= 125; }))
      << Call("GET", "/metrics").body;
  EXPECT_EQ(Series("kinference_kv_events_live", "sim/1"), 1);

  // The same conversation, one more word: only sim/1 holds its prefix.
  auto r = Post(ChatBody(prefix + " onemore"), {}, "/v1/chat/completions");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "sim/1");
  EXPECT_EQ(r.headers.Find("x-kinference-prefix-index"), "precise");
  // The hit the router predicted is the one the engine reports.
  const int cached = CachedTokens(r);
  EXPECT_GE(cached, 1984);
  EXPECT_EQ(r.headers.Find("x-kinference-matched-tokens"), std::to_string(cached));
  EXPECT_GE(Metric("kinference_routing_prefix_index_total{index=\"precise\"}"), 1);
}

TEST_F(KvFeedsGatewayTest, DeadPublisherFallsBackVisiblyAndARestartedEngineIsEmpty) {
  const uint16_t http0 = gateway::testing::DeadPort();
  const std::string pub0 = FreeTcp(), replay0 = FreeTcp();
  auto sim0 = StartSim(http0, pub0, replay0);
  auto sim1 = StartSim(0, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0");
  ASSERT_TRUE(sim0 && sim1);
  Start(Config({http0, sim1->port()}));
  const std::string prefix = SyntheticText(/*seed=*/78, 1000);
  ASSERT_EQ(Direct(http0, ChatBody(prefix)).status, 200);
  ASSERT_TRUE(WaitFor([&] { return Series("kinference_kv_index_blocks", "sim/0") >= 62; }));
  ASSERT_EQ(Series("kinference_kv_events_live", "sim/0"), 1);

  // The engine dies: its publisher disconnects, the feed is not live, the index is empty.
  sim0->Stop();
  ASSERT_TRUE(WaitFor([&] { return Series("kinference_kv_events_live", "sim/0") == 0; }));
  EXPECT_GE(Series("kinference_kv_events_disconnects_total", "sim/0"), 1);
  EXPECT_EQ(Series("kinference_kv_index_blocks", "sim/0"), 0);

  // Restarted on the same ports: an empty cache. Its first batch is AllBlocksCleared; the
  // new process's sequence starts over. The prompt the old process cached is no hit now,
  // and the precise index says so (the approximate one never saw that traffic either).
  sim0 = StartSim(http0, pub0, replay0);
  ASSERT_TRUE(sim0);
  const std::string other = SyntheticText(/*seed=*/79, 500);
  ASSERT_EQ(Direct(http0, ChatBody(other)).status, 200);
  ASSERT_TRUE(WaitFor([&] { return Series("kinference_kv_events_live", "sim/0") == 1; }));
  ASSERT_TRUE(WaitFor([&] { return Series("kinference_kv_index_blocks", "sim/0") >= 31; }));
  EXPECT_LT(Series("kinference_kv_index_blocks", "sim/0"), 62);
  auto r = Post(ChatBody(prefix + " again"), {}, "/v1/chat/completions");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("x-kinference-matched-tokens"), "0");
  EXPECT_EQ(CachedTokens(r), 0);
}

// A configured publisher (in the test) whose batch is lost on PUB/SUB: the gateway refills
// it from the replay socket and its index holds every block.
TEST_F(KvFeedsGatewayTest, GapIsRefilledFromTheReplaySocket) {
  gateway::testing::FakeUpstream& upstream = AddFake();
  auto pub = kv::ZmqPublisher::Start(kv::PublisherOptions{});
  ASSERT_TRUE(pub.ok());
  GatewayConfig c = Config({upstream.port()});
  c.pools[0].kv_events->endpoints = {(*pub)->endpoint()};
  c.pools[0].kv_events->replay_endpoints = {(*pub)->replay_endpoint()};
  c.pools[0].kv_events->topic = "kv";
  Start(c);
  uint64_t next_key = 1;
  auto stored = [&](int blocks) {
    kv::BlockStored s;
    s.block_size = 16;
    for (int b = 0; b < blocks; ++b) {
      s.block_hashes.push_back(next_key++);
      s.token_ids.insert(s.token_ids.end(), 16, 7);
    }
    kv::EventBatch batch;
    batch.events.push_back(s);
    return batch;
  };
  // Until the subscriber has joined (PUB/SUB drops what is sent before), one block a batch.
  ASSERT_TRUE(WaitFor([&] {
    (*pub)->Publish(stored(1));
    return Series("kinference_kv_events_live", "sim/0") == 1;
  }));
  ASSERT_TRUE(WaitFor([&] {
    return Series("kinference_kv_index_blocks", "sim/0") == static_cast<double>(next_key - 1);
  }));
  const double gaps = Series("kinference_kv_events_gaps_total", "sim/0");
  const double replayed = Series("kinference_kv_events_replayed_batches_total", "sim/0");
  (*pub)->Publish(stored(2));
  (*pub)->DropNextForTest();
  (*pub)->Publish(stored(3));  // lost on the PUB socket, kept for replay
  (*pub)->Publish(stored(4));
  ASSERT_TRUE(WaitFor([&] {
    return Series("kinference_kv_index_blocks", "sim/0") == static_cast<double>(next_key - 1);
  })) << Call("GET", "/metrics").body;
  EXPECT_EQ(Series("kinference_kv_events_gaps_total", "sim/0"), gaps + 1);
  EXPECT_GE(Series("kinference_kv_events_replayed_batches_total", "sim/0"), replayed + 1);
  EXPECT_EQ(Series("kinference_kv_events_resyncs_total", "sim/0"), 0);
}

}  // namespace
}  // namespace kinference::gateway
