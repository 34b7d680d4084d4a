// The relay of an upstream's SSE stream to a streaming client, against an in-process
// upstream that writes scripted bytes (pieces cut anywhere, 20 ms apart so that they
// arrive in separate reads): events the upstream frames as FormatSse does reach the
// client byte for byte, other framings as FormatSse writes them; an event split across
// reads is relayed whole; the usage-only final chunk is counted whether or not the
// client asked for it; TTFT and ITL are observed per content chunk.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/sse.h"
#include "gateway/config/config.h"
#include "gateway_harness.h"
#include "http/server.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;

std::string Chunk(const std::string& choices) {
  return R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,)"
         R"("model":"m","choices":)" +
         choices + "}";
}
const std::string kUsageChunk =
    Chunk(R"([],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,)"
          R"("prompt_tokens_details":{"cached_tokens":8}})");

// role, three content chunks (one with escapes), finish, usage-only, [DONE]: as vLLM
// frames them.
std::vector<std::string> Events() {
  return {api::FormatSse(Chunk(R"([{"index":0,"delta":{"role":"assistant","content":""},)"
                               R"("logprobs":null,"finish_reason":null}])")),
          api::FormatSse(Chunk(R"([{"index":0,"delta":{"content":"Hel"},"logprobs":null,)"
                               R"("finish_reason":null}])")),
          api::FormatSse(Chunk(R"([{"index":0,"delta":{"content":"lo \"w\"\n"},)"
                               R"("logprobs":null,"finish_reason":null}])")),
          api::FormatSse(Chunk(R"([{"index":0,"delta":{"content":"!"},"logprobs":null,)"
                               R"("finish_reason":null}])")),
          api::FormatSse(Chunk(R"([{"index":0,"delta":{},"logprobs":null,)"
                               R"("finish_reason":"stop","stop_reason":null}])")),
          api::FormatSse(kUsageChunk),
          api::FormatSse("[DONE]")};
}

std::string Join(const std::vector<std::string>& parts, size_t skip = SIZE_MAX) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    if (i != skip) out += parts[i];
  return out;
}

// A vLLM stand-in on the harness's io_context: every chat request (streamed or not; the
// gateway streams non-streamed ones upstream) gets `pieces` written one by one, 20 ms
// apart, then the end of the stream.
class PiecesUpstream {
 public:
  PiecesUpstream(boost::asio::io_context& io, std::vector<std::string> pieces)
      : io_(io), pieces_(std::move(pieces)) {
    server_ = std::make_unique<http::Server>(io, http::ServerOptions{});
    server_->Route("POST", "/v1/chat/completions", [this](http::Request, auto w) {
      w->StartStream(200, "text/event-stream");
      Next(w, std::make_shared<boost::asio::steady_timer>(io_), 0);
    });
    server_->Route("GET", "/metrics", [](http::Request, auto w) {
      w->Send(200, "text/plain", "# TYPE vllm:num_requests_waiting gauge\n");
    });
    auto port = server_->Start();
    port_ = port.ok() ? *port : 0;
  }
  uint16_t port() const { return port_; }
  void Stop() { server_->Stop(); }

 private:
  void Next(std::shared_ptr<http::ResponseWriter> w, std::shared_ptr<boost::asio::steady_timer> t,
            size_t i) {
    if (w->closed()) return;
    if (i == pieces_.size()) return w->End();
    w->Write(pieces_[i]);
    t->expires_after(std::chrono::milliseconds(20));
    t->async_wait([this, w, t, i](boost::system::error_code ec) {
      if (!ec) Next(w, t, i + 1);
    });
  }

  boost::asio::io_context& io_;
  std::vector<std::string> pieces_;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
};

const std::string kStream =
    R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";
const std::string kStreamUsage =
    R"({"model":"m","stream":true,"stream_options":{"include_usage":true},)"
    R"("messages":[{"role":"user","content":"hi"}]})";
const std::string kWhole = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";

class StreamRelayTest : public testing::GatewayHarness {
 protected:
  void StartWith(std::vector<std::string> pieces) {
    upstream_ = std::make_unique<PiecesUpstream>(io(), std::move(pieces));
    PiecesUpstream* u = upstream_.get();
    OnStop([u] { u->Stop(); });
    GatewayConfig c;
    c.scrape_interval_s = 0.2;
    c.pools.push_back(PoolConfig{
        "p", "m", {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(u->port()), "test")}});
    Start(c);
  }
  // Usage, TTFT and ITL as counted for one request whose stream had 3 content chunks.
  void ExpectObservedOnce() {
    EXPECT_EQ(Metric("kinference_prompt_tokens_total{tenant=\"default\",model=\"m\"}"), 12);
    EXPECT_EQ(Metric("kinference_cached_tokens_total{tenant=\"default\",model=\"m\"}"), 8);
    EXPECT_EQ(Metric("kinference_completion_tokens_total{tenant=\"default\",model=\"m\"}"), 3);
    EXPECT_EQ(Metric("kinference_time_to_first_token_seconds_count{model=\"m\"}"), 1);
    EXPECT_EQ(Metric("kinference_inter_token_latency_seconds_count{model=\"m\"}"), 2);
  }

  std::unique_ptr<PiecesUpstream> upstream_;
};

TEST_F(StreamRelayTest, FormattedEventsReachTheClientByteForByte) {
  const std::vector<std::string> events = Events();
  StartWith(events);
  auto r = Post(kStreamUsage);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, Join(events));
  ExpectObservedOnce();
}

TEST_F(StreamRelayTest, UsageOnlyChunkIsCountedThoughTheClientDidNotAskForIt) {
  const std::vector<std::string> events = Events();
  StartWith(events);
  auto r = Post(kStream);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, Join(events, /*skip=*/5));  // everything but the usage chunk
  ExpectObservedOnce();
}

// Cut inside the JSON, between the two newlines that end an event, after "data:", and
// with several events in one piece.
TEST_F(StreamRelayTest, EventsSplitAcrossReadsAreRelayedWhole) {
  const std::vector<std::string> events = Events();
  const std::string all = Join(events);
  std::vector<std::string> pieces;
  size_t e1 = events[0].size(), e2 = e1 + events[1].size(), e3 = e2 + events[2].size();
  std::vector<size_t> cuts = {30, e1 - 1, e2 + 5, e2 + 40, e3 + 3};
  size_t prev = 0;
  for (size_t c : cuts) {
    pieces.push_back(all.substr(prev, c - prev));
    prev = c;
  }
  pieces.push_back(all.substr(prev));  // the rest (finish, usage, [DONE]) at once
  StartWith(pieces);
  auto r = Post(kStreamUsage);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, all);
  ExpectObservedOnce();
}

// CRLF line ends, a comment, an id field and "data:" without its space: relayed as
// FormatSse writes the events (comment and id dropped), as before.
TEST_F(StreamRelayTest, OtherFramingsAreRelayedAsFormatSseWritesThem) {
  const std::string role =
      Chunk(R"([{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}])");
  const std::string hel = Chunk(R"([{"index":0,"delta":{"content":"Hel"},"finish_reason":null}])");
  const std::string lo = Chunk(R"([{"index":0,"delta":{"content":"lo"},"finish_reason":null}])");
  const std::string bang = Chunk(R"([{"index":0,"delta":{"content":"!"},"finish_reason":null}])");
  const std::string stop = Chunk(R"([{"index":0,"delta":{},"finish_reason":"stop"}])");
  StartWith({": keep-alive\n\n", "data: " + role + "\r\n\r\n", "id: 7\ndata: " + hel + "\n\n",
             "data:" + lo + "\n\n", "data: " + bang + "\n: inside\n\n", "data: " + stop + "\n\n",
             "data: " + kUsageChunk + "\n\n", "data: [DONE]\n\n"});
  auto r = Post(kStreamUsage);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, api::FormatSse(role) + api::FormatSse(hel) + api::FormatSse(lo) +
                        api::FormatSse(bang) + api::FormatSse(stop) + api::FormatSse(kUsageChunk) +
                        api::FormatSse("[DONE]"));
  ExpectObservedOnce();
}

// A non-streamed client of the same split stream gets the one rebuilt object.
TEST_F(StreamRelayTest, SplitStreamIsRebuiltWholeForANonStreamedClient) {
  const std::string all = Join(Events());
  std::vector<std::string> pieces;
  for (size_t at = 0; at < all.size(); at += 97) pieces.push_back(all.substr(at, 97));
  StartWith(pieces);
  auto r = Post(kWhole);
  ASSERT_EQ(r.status, 200) << r.body;
  const json::value v = json::parse(r.body);
  EXPECT_EQ(v.at("object"), "chat.completion");
  EXPECT_EQ(v.at("choices").at(0).at("message").at("content"), "Hello \"w\"\n!");
  EXPECT_EQ(v.at("usage").at("prompt_tokens_details").at("cached_tokens"), 8);
  ExpectObservedOnce();
}

}  // namespace
}  // namespace kinference::gateway
