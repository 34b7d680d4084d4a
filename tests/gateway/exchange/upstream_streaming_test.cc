// Non-streamed client requests streamed upstream (upstream_streaming: always, the default)
// against an in-process scripted vLLM that answers the same request streamed or whole:
// the upstream sees stream=true, the client gets one object equal to the whole answer,
// TTFT is observed; errors mid-stream and incomplete streams ([DONE] or not) are 502 in
// the front's shape, a connection lost mid-stream 503, and request_timeout_s bounds the
// whole call (504, as in as_requested); `as_requested` and requests a stream cannot
// answer faithfully go upstream as the client sent them.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/sse.h"
#include "config_test_util.h"
#include "gateway/config/config.h"
#include "gateway/gateway.h"
#include "gateway_harness.h"
#include "http/server.h"

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

enum class Script {
  kOk,
  kErrorEvent,
  kCut,
  kStatus400,
  kUnfinishedThenDone,  // one unfinished content chunk, then [DONE]
  kOnlyDone,            // [DONE] and nothing else
  kNoUsageNoDone,       // finished choices, then a clean end: no usage, no [DONE]
  kDropMidStream,       // two chunks, then the connection is lost (server stops)
  kSlow,                // a chunk every 50 ms for 3 s, then the end (whole: after 3 s)
};

// A vLLM stand-in on the harness's io_context: streamed requests get `chunks`, others
// `whole`; records the request bodies.
class ScriptedUpstream {
 public:
  ScriptedUpstream(boost::asio::io_context& io, Script script) : io_(io), script_(script) {
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
  // A request's connection was closed by the gateway before its response ended.
  bool saw_cancel() const { return cancelled_; }
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
    const bool streamed = stream && stream->as_bool();
    if (script_ == Script::kSlow) {
      w->OnClose([this] { cancelled_ = true; });
      if (streamed) w->StartStream(200, "text/event-stream");
      return Trickle(w, std::make_shared<boost::asio::steady_timer>(io_), 0,
                     streamed ? std::string() : whole);
    }
    if (!streamed) {
      w->Send(200, "application/json", whole);
      return;
    }
    w->StartStream(200, "text/event-stream");
    if (script_ == Script::kOnlyDone) {
      w->Write(api::FormatSse("[DONE]"));
      return w->End();
    }
    if (script_ == Script::kUnfinishedThenDone) {
      w->Write(api::FormatSse(chunks[0]));
      w->Write(api::FormatSse(chunks[1]));  // content, finish_reason null
      w->Write(api::FormatSse("[DONE]"));
      return w->End();
    }
    if (script_ == Script::kDropMidStream) {
      w->Write(api::FormatSse(chunks[0]));
      w->Write(api::FormatSse(chunks[1]));
      auto t = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::milliseconds(100));
      t->async_wait([this, t](boost::system::error_code) { server_->Stop(); });
      return;
    }
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (script_ == Script::kErrorEvent && i == 2) {
        w->Write(api::FormatSse(
            R"({"error":{"message":"engine died","type":"internal_error","code":500}})"));
        w->Write(api::FormatSse("[DONE]"));
        break;
      }
      if (script_ == Script::kCut && i == 2) break;
      if (script_ == Script::kNoUsageNoDone &&
          (chunks[i] == "[DONE]" || chunks[i].find(R"("usage")") != std::string::npos)) {
        continue;
      }
      w->Write(api::FormatSse(chunks[i]));
    }
    w->End();
  }

  // kSlow: 60 ticks of 50 ms (3 s). A stream (`whole` empty) gets a content chunk per
  // tick, then its clean end; a non-streamed request gets `whole` after the last tick.
  void Trickle(std::shared_ptr<http::ResponseWriter> w,
               std::shared_ptr<boost::asio::steady_timer> t, int n, std::string whole) {
    if (w->closed()) return;
    if (n >= 60) {
      if (!whole.empty()) return w->Send(200, "application/json", whole);
      w->Write(api::FormatSse(ChatChunk(R"([{"index":0,"delta":{},"finish_reason":"length"}])")));
      w->Write(api::FormatSse(ChatChunk(std::string(R"([],"usage":)") + kUsage)));
      w->Write(api::FormatSse("[DONE]"));
      return w->End();
    }
    if (whole.empty()) {
      w->Write(api::FormatSse(
          ChatChunk(R"([{"index":0,"delta":{"content":"x"},"finish_reason":null}])")));
    }
    t->expires_after(std::chrono::milliseconds(50));
    t->async_wait([this, w, t, n, whole = std::move(whole)](boost::system::error_code ec) {
      if (!ec) Trickle(w, t, n + 1, whole);
    });
  }

  boost::asio::io_context& io_;
  Script script_;
  bool text_ = false;
  std::atomic<bool> cancelled_{false};
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
const std::string kHi = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
const std::string kMessagesHi =
    R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";

class UpstreamStreamingTest : public testing::GatewayHarness {
 protected:
  ScriptedUpstream& StartWith(Script script, UpstreamStreaming mode = UpstreamStreaming::kAlways,
                              bool text = false,
                              const std::function<void(GatewayConfig&)>& tweak = {}) {
    upstream_ = std::make_unique<ScriptedUpstream>(io(), script);
    upstream_->set_text(text);
    ScriptedUpstream* u = upstream_.get();
    OnStop([u] { u->Stop(); });
    GatewayConfig c;
    c.scrape_interval_s = 0.2;
    c.upstream_streaming = mode;
    c.pools.push_back(PoolConfig{
        "p", "m", {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(u->port()), "test")}});
    if (tweak) tweak(c);
    Start(c);
    return *u;
  }
  // Sum of kinference_requests_total over the series with outcome="`outcome`".
  double Outcomes(const std::string& outcome) {
    std::istringstream text(Call("GET", "/metrics").body);
    double sum = 0;
    for (std::string line; std::getline(text, line);) {
      if (line.starts_with("kinference_requests_total{") &&
          line.find("outcome=\"" + outcome + "\"") != std::string::npos) {
        sum += std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return sum;
  }
  // An incomplete stream: 502 api_error on /v1/chat/completions, 502 in Anthropic's shape
  // on /v1/messages (not a 200 with stop_reason end_turn); both counted as errors.
  void ExpectIncomplete502() {
    auto r = Post(kHi);
    EXPECT_EQ(r.status, 502) << r.body;
    if (r.status == 502) {
      EXPECT_EQ(json::parse(r.body).at("error").at("type"), "api_error") << r.body;
    }
    auto m = Post(kMessagesHi, {}, "/v1/messages");
    EXPECT_EQ(m.status, 502) << m.body;
    if (m.status == 502) {
      const json::value body = json::parse(m.body);
      EXPECT_EQ(body.at("type"), "error") << m.body;
      EXPECT_EQ(body.at("error").at("type"), "api_error") << m.body;
    }
    EXPECT_EQ(Outcomes("error"), 2);
    EXPECT_EQ(Outcomes("success"), 0);
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
  // The gateway's words with the request id; the upstream's only in the log.
  std::string message(body.at("error").at("message").as_string());
  EXPECT_EQ(message.find("engine died"), std::string::npos) << message;
  EXPECT_NE(message.find("request id"), std::string::npos) << message;
  EXPECT_EQ(body.at("error").at("type"), "api_error");
}

// A client that streams gets the upstream's error event replaced by the gateway's own:
// the status class (5xx -> code 502, api_error) and the request id, not the upstream's
// words.
TEST_F(UpstreamStreamingTest, ErrorEventRelayedToAStreamingClientIsTheGatewaysOwn) {
  StartWith(Script::kErrorEvent);
  auto r = Post(R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("engine died"), std::string::npos) << r.body;
  size_t at = r.body.find("data: {\"error\"");
  ASSERT_NE(at, std::string::npos) << r.body;
  json::value err = json::parse(r.body.substr(at + 6, r.body.find("\n\n", at) - at - 6));
  EXPECT_EQ(err.at("error").at("code"), 502) << r.body;
  EXPECT_EQ(err.at("error").at("type"), "api_error");
  EXPECT_NE(std::string(err.at("error").at("message").as_string()).find("request id"),
            std::string::npos);
  // Counted once, as an error: the stream did not complete.
  EXPECT_EQ(Outcomes("error"), 1);
  EXPECT_EQ(Outcomes("success"), 0);
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

TEST_F(UpstreamStreamingTest, UnfinishedChoiceThenDoneIs502) {
  StartWith(Script::kUnfinishedThenDone, UpstreamStreaming::kAlways, /*text=*/true);
  ExpectIncomplete502();
}

TEST_F(UpstreamStreamingTest, OnlyDoneIs502) {
  StartWith(Script::kOnlyDone, UpstreamStreaming::kAlways, /*text=*/true);
  ExpectIncomplete502();
}

TEST_F(UpstreamStreamingTest, FinishedWithoutUsageOrDoneIs502) {
  StartWith(Script::kNoUsageNoDone, UpstreamStreaming::kAlways, /*text=*/true);
  ExpectIncomplete502();
}

// A connection lost mid-response answers 503, as for a non-streamed upstream.
TEST_F(UpstreamStreamingTest, ConnectionLostMidStreamIs503) {
  StartWith(Script::kDropMidStream, UpstreamStreaming::kAlways, /*text=*/true);
  auto r = Post(kHi);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_TRUE(json::parse(r.body).at("error").is_object()) << r.body;
}

// request_timeout_s (1 model second at time_scale 4: 0.25 s) against an upstream that
// needs 3 s: both modes answer the same 504 long before the upstream would end, and the
// upstream sees the gateway leave (vLLM aborts the request).
class UpstreamTimeoutTest : public UpstreamStreamingTest {
 protected:
  struct Answer {
    http::Response chat, messages;
    double chat_s = 0;
  };
  Answer Run(UpstreamStreaming mode) {
    auto& up = StartWith(Script::kSlow, mode, /*text=*/true, [](GatewayConfig& c) {
      c.time_scale = 4;
      c.request_timeout_s = 1;
    });
    Answer a;
    auto start = std::chrono::steady_clock::now();
    a.chat = Post(kHi);
    a.chat_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    a.messages = Post(kMessagesHi, {}, "/v1/messages");
    for (int i = 0; i < 100 && !up.saw_cancel(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(up.saw_cancel());
    EXPECT_EQ(up.bodies().size(), 2u);  // a timeout is not retried
    EXPECT_EQ(Outcomes("error"), 2);
    EXPECT_EQ(Outcomes("success"), 0);
    return a;
  }
  static void ExpectTimeout504(const Answer& a) {
    EXPECT_EQ(a.chat.status, 504) << a.chat.body;
    EXPECT_LT(a.chat_s, 2.0);
    if (a.chat.status == 504) {
      const json::value e = json::parse(a.chat.body).at("error");
      EXPECT_EQ(e.at("type"), "timeout_error") << a.chat.body;
      EXPECT_EQ(e.at("code"), 504) << a.chat.body;
      const std::string message(e.at("message").as_string());
      // The gateway's words and the request id; the upstream's address stays in the log.
      EXPECT_TRUE(
          message.starts_with("The model server did not finish within the request "
                              "timeout; request id kgw-"))
          << message;
      EXPECT_EQ(message.find("127.0.0.1"), std::string::npos) << message;
    }
    EXPECT_EQ(a.messages.status, 504) << a.messages.body;
    if (a.messages.status == 504) {
      const json::value body = json::parse(a.messages.body);
      EXPECT_EQ(body.at("type"), "error") << a.messages.body;
      EXPECT_EQ(body.at("error").at("type"), "timeout_error") << a.messages.body;
    }
  }
};

TEST_F(UpstreamTimeoutTest, RequestTimeoutBoundsTheWholeStreamedCall) {
  Answer a = Run(UpstreamStreaming::kAlways);
  ExpectTimeout504(a);
  EXPECT_TRUE(Streamed(upstream_->bodies()[0]));
}

TEST_F(UpstreamTimeoutTest, AsRequestedAnswersTheSame504) {
  Answer a = Run(UpstreamStreaming::kAsRequested);
  ExpectTimeout504(a);
  EXPECT_FALSE(Streamed(upstream_->bodies()[0]));
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
