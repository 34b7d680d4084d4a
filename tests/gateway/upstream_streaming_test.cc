// Non-streamed client requests streamed upstream (upstream_streaming: always, the default)
// against an in-process scripted vLLM that answers the same request streamed or whole:
// the upstream sees stream=true, the client gets one object equal to the whole answer,
// TTFT is observed; errors mid-stream are 502 in the front's shape; `as_requested` and
// requests a stream cannot answer faithfully go upstream as the client sent them.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config_test_util.h"
#include "gateway/config.h"
#include "gateway/gateway.h"
#include "gateway_harness.h"
#include "http/server.h"
#include "http/sse.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;

const char* kUsage = R"({"prompt_tokens":12,"completion_tokens":7,"total_tokens":19,)"
                     R"("prompt_tokens_details":{"cached_tokens":8}})";

std::string ChatChunk(const std::string& choices) {
  return R"({"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,)"
         R"("model":"m","system_fingerprint":"fp1","choices":)" +
         choices + "}";
}

// n=2: choice 0 calls two tools, choice 1 answers "Hello".
const std::vector<std::string> kChatChunks = {
    ChatChunk(R"([{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null},)"
              R"({"index":1,"delta":{"role":"assistant","content":""},"finish_reason":null}])"),
    ChatChunk(R"([{"index":1,"delta":{"content":"Hel"},"finish_reason":null}])"),
    ChatChunk(R"([{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function",)"
              R"("function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}])"),
    ChatChunk(R"([{"index":0,"delta":{"tool_calls":[{"index":0,)"
              R"("function":{"arguments":"{\"city\":"}}]},"finish_reason":null}])"),
    ChatChunk(R"([{"index":1,"delta":{"content":"lo"},"finish_reason":null}])"),
    ChatChunk(R"([{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function",)"
              R"("function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":null}])"),
    ChatChunk(R"([{"index":0,"delta":{"tool_calls":[{"index":0,)"
              R"("function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}])"),
    ChatChunk(R"([{"index":0,"delta":{},"finish_reason":"tool_calls","stop_reason":null},)"
              R"({"index":1,"delta":{},"finish_reason":"stop","stop_reason":null}])"),
    ChatChunk(std::string(R"([],"usage":)") + kUsage),
    "[DONE]"};

const std::string kChatWhole = std::string(R"({
  "id":"chatcmpl-9","object":"chat.completion","created":1700000000,"model":"m",
  "system_fingerprint":"fp1",
  "choices":[
    {"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
       {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
       {"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
     "logprobs":null,"finish_reason":"tool_calls","stop_reason":null},
    {"index":1,"message":{"role":"assistant","content":"Hello"},
     "logprobs":null,"finish_reason":"stop","stop_reason":null}],
  "usage":)") + kUsage + "}";

std::string CmplChunk(const std::string& choices) {
  return R"({"id":"cmpl-3","object":"text_completion","created":1700000000,"model":"m",)"
         R"("choices":)" +
         choices + "}";
}

const std::vector<std::string> kCmplChunks = {
    CmplChunk(R"([{"index":0,"text":"Hel","logprobs":{"tokens":["Hel"],"token_logprobs":[-0.5],)"
              R"("top_logprobs":[{"Hel":-0.5}],"text_offset":[0]},"finish_reason":null}])"),
    CmplChunk(R"([{"index":0,"text":"lo","logprobs":{"tokens":["lo"],"token_logprobs":[-0.25],)"
              R"("top_logprobs":[{"lo":-0.25}],"text_offset":[3]},"finish_reason":"length",)"
              R"("stop_reason":null}])"),
    CmplChunk(std::string(R"([],"usage":)") + kUsage), "[DONE]"};

const std::string kCmplWhole = std::string(R"({
  "id":"cmpl-3","object":"text_completion","created":1700000000,"model":"m",
  "choices":[{"index":0,"text":"Hello",
              "logprobs":{"tokens":["Hel","lo"],"token_logprobs":[-0.5,-0.25],
                          "top_logprobs":[{"Hel":-0.5},{"lo":-0.25}],"text_offset":[0,3]},
              "finish_reason":"length","stop_reason":null}],
  "usage":)") + kUsage + "}";

// Single choice "Hi there", for the /v1/messages front.
const std::vector<std::string> kTextChunks = {
    ChatChunk(R"([{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}])"),
    ChatChunk(R"([{"index":0,"delta":{"content":"Hi"},"finish_reason":null}])"),
    ChatChunk(R"([{"index":0,"delta":{"content":" there"},"finish_reason":null}])"),
    ChatChunk(R"([{"index":0,"delta":{},"finish_reason":"stop"}])"),
    ChatChunk(std::string(R"([],"usage":)") + kUsage),
    "[DONE]"};

const std::string kTextWhole = std::string(R"({
  "id":"chatcmpl-9","object":"chat.completion","created":1700000000,"model":"m",
  "system_fingerprint":"fp1",
  "choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},
              "logprobs":null,"finish_reason":"stop"}],"usage":)") +
                               kUsage + "}";

enum class Script { kOk, kErrorEvent, kCut, kStatus400 };

// A vLLM stand-in on the harness's io_context: streamed requests get `chunks`, others
// `whole`; records the request bodies.
class ScriptedUpstream {
 public:
  ScriptedUpstream(boost::asio::io_context& io, Script script) : script_(script) {
    server_ = std::make_unique<http::Server>(io, http::ServerOptions{});
    server_->Route("POST", "/v1/chat/completions", [this](http::Request r, auto w) {
      Handle(r, w, text_ ? kTextChunks : kChatChunks, text_ ? kTextWhole : kChatWhole);
    });
    server_->Route("POST", "/v1/completions",
                   [this](http::Request r, auto w) { Handle(r, w, kCmplChunks, kCmplWhole); });
    server_->Route("GET", "/metrics", [](http::Request, auto w) {
      w->Send(200, "text/plain", "# TYPE vllm:num_requests_waiting gauge\n");
    });
    auto port = server_->Start();
    port_ = port.ok() ? *port : 0;
  }
  void set_text(bool text) { text_ = text; }  // before the gateway starts
  uint16_t port() const { return port_; }
  void Stop() { server_->Stop(); }
  std::vector<json::object> bodies() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }

 private:
  void Handle(const http::Request& r, const std::shared_ptr<http::ResponseWriter>& w,
              const std::vector<std::string>& chunks, const std::string& whole) {
    json::object body = json::parse(r.body).as_object();
    {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(body);
    }
    if (script_ == Script::kStatus400) {
      w->Send(400, "application/json",
              R"({"object":"error","message":"bad n","type":"BadRequestError","param":null,)"
              R"("code":400})");
      return;
    }
    const auto* stream = body.if_contains("stream");
    if (!stream || !stream->as_bool()) {
      w->Send(200, "application/json", whole);
      return;
    }
    w->StartStream(200, "text/event-stream");
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (script_ == Script::kErrorEvent && i == 2) {
        w->Write(http::FormatSse(
            R"({"error":{"message":"engine died","type":"internal_error","code":500}})"));
        w->Write(http::FormatSse("[DONE]"));
        break;
      }
      if (script_ == Script::kCut && i == 2) break;
      w->Write(http::FormatSse(chunks[i]));
    }
    w->End();
  }

  Script script_;
  bool text_ = false;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::vector<json::object> bodies_;
};

const std::string kTtft = "kinference_time_to_first_token_seconds_count{model=\"m\"}";
const std::string kChat =
    R"({"model":"m","n":2,"messages":[{"role":"user","content":"weather?"}],)"
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}}]})";
const std::string kCmpl = R"({"model":"m","prompt":"say","logprobs":1})";

class UpstreamStreamingTest : public testing::GatewayHarness {
 protected:
  ScriptedUpstream& StartWith(Script script, UpstreamStreaming mode = UpstreamStreaming::kAlways,
                              bool text = false) {
    upstream_ = std::make_unique<ScriptedUpstream>(io(), script);
    upstream_->set_text(text);
    ScriptedUpstream* u = upstream_.get();
    OnStop([u] { u->Stop(); });
    GatewayConfig c;
    c.scrape_interval_s = 0.2;
    c.upstream_streaming = mode;
    c.pools.push_back(PoolConfig{
        "p", "m", {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(u->port()), "test")}});
    Start(c);
    return *u;
  }
  static bool Streamed(const json::object& body) {
    const auto* s = body.if_contains("stream");
    return s && s->is_bool() && s->get_bool();
  }

  std::unique_ptr<ScriptedUpstream> upstream_;
};

TEST_F(UpstreamStreamingTest, ChatIsStreamedUpstreamAndRebuiltWhole) {
  auto& up = StartWith(Script::kOk);
  auto r = Post(kChat);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("content-type"), "application/json");
  EXPECT_EQ(json::parse(r.body), json::parse(kChatWhole)) << r.body;
  ASSERT_EQ(up.bodies().size(), 1u);
  json::object sent = up.bodies()[0];
  EXPECT_TRUE(Streamed(sent));
  EXPECT_TRUE(sent.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(sent.at("n"), 2);
  EXPECT_EQ(Metric(kTtft), 1);
  EXPECT_EQ(Metric("kinference_cached_tokens_total{tenant=\"default\",model=\"m\"}"), 8);
  EXPECT_EQ(Metric("kinference_prompt_tokens_total{tenant=\"default\",model=\"m\"}"), 12);
}

TEST_F(UpstreamStreamingTest, CompletionsIsStreamedUpstreamAndRebuiltWhole) {
  auto& up = StartWith(Script::kOk);
  auto r = Post(kCmpl, {}, "/v1/completions");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(kCmplWhole)) << r.body;
  ASSERT_EQ(up.bodies().size(), 1u);
  EXPECT_TRUE(Streamed(up.bodies()[0]));
  EXPECT_EQ(Metric(kTtft), 1);
}

TEST_F(UpstreamStreamingTest, AsRequestedForwardsNonStreamed) {
  auto& up = StartWith(Script::kOk, UpstreamStreaming::kAsRequested);
  auto r = Post(kChat);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(kChatWhole));
  ASSERT_EQ(up.bodies().size(), 1u);
  EXPECT_FALSE(Streamed(up.bodies()[0]));
  EXPECT_FALSE(up.bodies()[0].contains("stream_options"));
  EXPECT_EQ(Metric(kTtft), 0);
}

TEST_F(UpstreamStreamingTest, UnfaithfulRequestsGoAsSent) {
  auto& up = StartWith(Script::kOk);
  auto r = Post(R"({"model":"m","prompt":"say","prompt_logprobs":1})", {}, "/v1/completions");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(kCmplWhole));
  ASSERT_EQ(up.bodies().size(), 1u);
  EXPECT_FALSE(Streamed(up.bodies()[0]));
}

TEST_F(UpstreamStreamingTest, ErrorEventMidStreamIs502) {
  StartWith(Script::kErrorEvent);
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 502) << r.body;
  const json::value body = json::parse(r.body);
  EXPECT_NE(std::string(body.at("error").at("message").as_string()).find("engine died"),
            std::string::npos);
  EXPECT_EQ(body.at("error").at("type"), "api_error");
}

TEST_F(UpstreamStreamingTest, CutStreamIs502NotTruncated200) {
  StartWith(Script::kCut);
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_TRUE(json::parse(r.body).at("error").is_object());
  auto m = Post(R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})", {},
                "/v1/messages");
  EXPECT_EQ(m.status, 502) << m.body;
  EXPECT_EQ(json::parse(m.body).at("type"), "error");
}

TEST_F(UpstreamStreamingTest, UpstreamErrorStatusRelayedAsBefore) {
  auto& up = StartWith(Script::kStatus400);
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body).at("message"), "bad n") << r.body;
  EXPECT_EQ(up.bodies().size(), 1u);  // a 4xx is not retried
}

TEST_F(UpstreamStreamingTest, MessagesFrontGetsWholeAnthropicMessageWithTtft) {
  auto& up = StartWith(Script::kOk, UpstreamStreaming::kAlways, /*text=*/true);
  auto r = Post(R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})", {},
                "/v1/messages");
  ASSERT_EQ(r.status, 200) << r.body;
  const json::value msg = json::parse(r.body);
  EXPECT_EQ(msg.at("type"), "message");
  EXPECT_EQ(msg.at("role"), "assistant");
  EXPECT_EQ(msg.at("content").at(0).at("type"), "text");
  EXPECT_EQ(msg.at("content").at(0).at("text"), "Hi there");
  EXPECT_EQ(msg.at("stop_reason"), "end_turn");
  EXPECT_EQ(msg.at("usage").at("output_tokens"), 7);
  ASSERT_EQ(up.bodies().size(), 1u);
  EXPECT_TRUE(Streamed(up.bodies()[0]));
  EXPECT_EQ(Metric(kTtft), 1);
}

// upstream_streaming: always (default) | as_requested; anything else names the key.
TEST(UpstreamStreamingConfig, Key) {
  const std::string pools = "pools: [{name: a, model: m, endpoints: [\"http://127.0.0.1:1\"]}]\n";
  EXPECT_EQ(ParseGatewayConfig(pools).upstream_streaming, UpstreamStreaming::kAlways);
  EXPECT_EQ(ParseGatewayConfig(pools + "upstream_streaming: always").upstream_streaming,
            UpstreamStreaming::kAlways);
  EXPECT_EQ(ParseGatewayConfig(pools + "upstream_streaming: as_requested").upstream_streaming,
            UpstreamStreaming::kAsRequested);
  EXPECT_NE(testing::ConfigErrorOf(pools + "upstream_streaming: never")
                .find("upstream_streaming: expected always or as_requested"),
            std::string::npos);
  EXPECT_NE(testing::ConfigErrorOf(pools + "upstream_stream: always").find("unknown field"),
            std::string::npos);
  auto example = LoadGatewayConfig(std::string(KINFERENCE_SOURCE_DIR) + "/examples/gateway.yaml");
  EXPECT_EQ(example.upstream_streaming, UpstreamStreaming::kAlways);
}

}  // namespace
}  // namespace kinference::gateway
