// engine-sim's KV events: vLLM's --kv-events-config, /kv_event_sources in vLLM's shape,
// and the published batches (both encodings, both hash kinds) naming the blocks of a
// request's prompt with vLLM's hashes, after an AllBlocksCleared that opens the stream.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <mutex>
#include <thread>

#include "common/tokenizer.h"
#include "engine/chat_template.h"
#include "enginesim/kv_events_config.h"
#include "http/client.h"
#include "kv/block_hash.h"
#include "kv/zmq/subscriber.h"
#include "testing/launch.h"

namespace kinference::enginesim {
namespace {

namespace json = boost::json;

TEST(KvEventsConfigTest, ParsesVllmsKeys) {
  auto c = ParseKvEventsConfig(
      R"({"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557",)"
      R"( "replay_endpoint": "tcp://*:5558", "topic": "kv", "buffer_steps": 50})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->enabled);
  EXPECT_EQ(c->endpoint, "tcp://*:5557");
  EXPECT_EQ(c->replay_endpoint, "tcp://*:5558");
  EXPECT_EQ(c->topic, "kv");
  EXPECT_EQ(c->buffer_steps, 50u);
  EXPECT_FALSE(ParseKvEventsConfig(R"({"enable_kv_cache_events": false})")->enabled);
  EXPECT_FALSE(
      ParseKvEventsConfig(R"({"enable_kv_cache_events": true, "publisher": "null"})")->enabled);
}

TEST(KvEventsConfigTest, RefusesUnknownKeysAndBadValues) {
  EXPECT_NE(ParseKvEventsConfig(R"({"endpont": "x"})").status().message().find("endpont"),
            std::string::npos);
  EXPECT_FALSE(ParseKvEventsConfig(R"({"buffer_steps": 0})").ok());
  EXPECT_FALSE(ParseKvEventsConfig(R"({"publisher": "kafka"})").ok());
  EXPECT_FALSE(ParseKvEventsConfig("[]").ok());
  EXPECT_FALSE(ParseEventEncoding("msgpack").ok());
  EXPECT_FALSE(ParseHashEncoding("hex").ok());
}

TEST(KvEventsConfigTest, SourcesBodyIsVllmsShapeWithTheBoundPort) {
  KvEventsConfig c;
  c.enabled = true;
  c.endpoint = "tcp://*:0";
  c.replay_endpoint = "tcp://127.0.0.1:0";
  c.topic = "kv";
  auto v = json::parse(KvEventSourcesBody(c, "tcp://0.0.0.0:41000", "tcp://127.0.0.1:41001"));
  const auto& s = v.at("0").as_object();
  EXPECT_EQ(s.at("endpoint").as_string(), "tcp://*:41000");
  EXPECT_EQ(s.at("replay_endpoint").as_string(), "tcp://127.0.0.1:41001");
  EXPECT_EQ(s.at("topic").as_string(), "kv");
  EXPECT_EQ(s.at("publisher").as_string(), "zmq");
  EXPECT_TRUE(s.at("enable_kv_cache_events").as_bool());
  EXPECT_EQ(s.at("buffer_steps").as_int64(), 10000);
  EXPECT_EQ(KvEventSourcesBody(KvEventsConfig{}, "", ""), "{}");
}

http::Response Fetch(uint16_t port, std::string method, std::string target, std::string body = {}) {
  http::ClientRequest r;
  r.method = std::move(method);
  r.port = port;
  r.target = std::move(target);
  r.body = std::move(body);
  r.header_timeout_s = 60;
  auto res = http::FetchSync(r);
  EXPECT_TRUE(res.ok()) << res.status().message();
  return res.ok() ? *res : http::Response{};
}

class PublishedEventsTest : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(PublishedEventsTest, BlockStoredNamesThePromptsBlocksWithVllmsHashes) {
  const auto& [encoding, hashes] = GetParam();
  auto sim = testing::LaunchKinference(
      {"engine-sim", "--port", "0", "--time-scale", "50", "--kv-events-config",
       R"({"enable_kv_cache_events": true, "endpoint": "tcp://127.0.0.1:0", )"
       R"("replay_endpoint": "tcp://127.0.0.1:0", "topic": "kv"})",
       "--kv-events-encoding", encoding, "--kv-events-hashes", hashes});
  ASSERT_TRUE(sim);
  auto sources = json::parse(Fetch(sim->port(), "GET", "/kv_event_sources").body);
  const auto& src = sources.at("0").as_object();
  kv::SubscriberOptions o;
  o.endpoint = std::string(src.at("endpoint").as_string());
  o.replay_endpoint = std::string(src.at("replay_endpoint").as_string());
  o.topic = std::string(src.at("topic").as_string());
  ASSERT_NE(o.endpoint, "tcp://127.0.0.1:0");

  std::mutex mu;
  std::vector<kv::KvEvent> events;
  kv::SubscriberSink sink;
  sink.on_events = [&](bool, std::vector<kv::EventBatch> batches) {
    std::lock_guard lock(mu);
    for (auto& b : batches)
      for (auto& e : b.events) events.push_back(std::move(e));
  };
  auto sub = kv::ZmqSubscriber::Start(o, sink);
  ASSERT_TRUE(sub.ok());

  const std::string content = SyntheticText(/*seed=*/5, 300);
  auto body = [](const std::string& text) {
    return json::serialize(
        json::object{{"model", "google/gemma-3-27b-it"},
                     {"messages", json::array{json::object{{"role", "user"}, {"content", text}}}},
                     {"max_tokens", 2}});
  };
  // The prompt's blocks as vLLM hashes them (block size 16, the profile's).
  auto prompt = Tokenize(engine::ApplyChatTemplate({{"user", content}}, true));
  auto want = kv::BlockHasher().BlockKeys(prompt, 16);
  ASSERT_GE(want.size(), 18u);

  std::vector<uint64_t> stored;
  bool cleared_first = false;
  ASSERT_EQ(Fetch(sim->port(), "POST", "/v1/chat/completions", body(content)).status, 200);
  for (int i = 0; i < 600 && stored.size() < want.size(); ++i) {
    // Other prompts keep batches coming: the subscriber's first one (whatever PUB/SUB
    // dropped before it joined) makes it replay the stream from sequence 0.
    if (i % 10 == 0) {
      ASSERT_EQ(Fetch(sim->port(), "POST", "/v1/chat/completions",
                      body(SyntheticText(/*seed=*/100 + i, 40)))
                    .status,
                200);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard lock(mu);
    stored.clear();
    cleared_first = !events.empty() && std::holds_alternative<kv::AllBlocksCleared>(events[0]);
    for (const auto& e : events) {
      if (const auto* s = std::get_if<kv::BlockStored>(&e)) {
        EXPECT_EQ(s->block_size, 16);
        EXPECT_EQ(s->token_ids.size(), s->block_hashes.size() * 16);
        stored.insert(stored.end(), s->block_hashes.begin(), s->block_hashes.end());
      }
    }
  }
  EXPECT_TRUE(cleared_first);  // sequence 0, recovered by replay
  ASSERT_GE(stored.size(), want.size());
  stored.resize(want.size());  // blocks filled by generated tokens may follow
  EXPECT_EQ(stored, want);
}

INSTANTIATE_TEST_SUITE_P(Encodings, PublishedEventsTest,
                         ::testing::Values(std::pair<std::string, std::string>{"map", "int"},
                                           std::pair<std::string, std::string>{"array", "bytes"}));

}  // namespace
}  // namespace kinference::enginesim
