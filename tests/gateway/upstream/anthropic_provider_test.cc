// An Anthropic provider behind the gateway, against an in-test HTTPS server answering
// canned Anthropic responses (certificate made at test time): translated chat requests
// and responses, native /v1/messages passthrough byte for byte (thinking, citations and
// cache fields included), headers, error mapping, usage accounting and /v1/completions.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "../../http/tls_fake_server.h"
#include "fake_upstream.h"
#include "gateway_harness.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::MakeTestCert;
using kinference::testing::TestCert;
using kinference::testing::TlsFakeServer;
using testing::kChat;

const char* kKeyEnv = "KINFERENCE_TEST_ANTHROPIC_KEY";
const std::string kSeries = "{tenant=\"default\",model=\"m\"}";

// A stream as Anthropic sends it (API reference "Streaming Messages"), with a thinking
// block, a citations delta and cache counts.
const std::string kStream =
    "event: message_start\n"
    R"(data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":20,"output_tokens":1}}})"
    "\n\nevent: content_block_start\n"
    R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}})"
    "\n\nevent: ping\n"
    R"(data: {"type": "ping"})"
    "\n\nevent: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}})"
    "\n\nevent: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}})"
    "\n\nevent: content_block_stop\n"
    R"(data: {"type":"content_block_stop","index":0})"
    "\n\nevent: content_block_start\n"
    R"(data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})"
    "\n\nevent: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x","document_index":0,"start_char_index":0,"end_char_index":1}}})"
    "\n\nevent: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}})"
    "\n\nevent: content_block_stop\n"
    R"(data: {"type":"content_block_stop","index":1})"
    "\n\nevent: message_delta\n"
    R"(data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}})"
    "\n\nevent: message_stop\n"
    R"(data: {"type":"message_stop"})"
    "\n\n";

const std::string kMessage =
    R"({"id":"msg_02","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"Hi","citations":null},{"type":"tool_use","id":"toolu_1","name":"get","input":{"city":"Paris"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":6,"output_tokens":5}})";

const std::string kMessages =
    R"({"model":"m","max_tokens":64,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hello"}]})";

class AnthropicProviderTest : public testing::GatewayHarness {
 protected:
  void SetUp() override {
    cert_ = MakeTestCert("anthropic");
    ASSERT_FALSE(cert_.cert_file.empty()) << "openssl CLI failed";
    server_ = std::make_unique<TlsFakeServer>(cert_);
    setenv(kKeyEnv, "sk-ant-secret", 1);
    ProviderConfig p;
    p.name = "claude";
    p.model = "claude-x";
    p.serves_model = "m";
    p.base_url = "https://127.0.0.1:" + std::to_string(server_->port());
    p.host = "127.0.0.1";
    p.port = server_->port();
    p.api_key_env = kKeyEnv;
    p.ca_file = cert_.cert_file;
    p.api = ProviderApi::kAnthropic;
    p.retries_before_first_byte = 0;
    GatewayConfig c;
    c.providers.push_back(p);
    AddPools(c);
    Start(c);
  }
  virtual void AddPools(GatewayConfig&) {}
  TestCert cert_;
  std::unique_ptr<TlsFakeServer> server_;
};

TEST_F(AnthropicProviderTest, ChatCompletionIsTranslatedBothWays) {
  server_->set_response(200, "application/json", kMessage);
  auto r = Post(R"({"model":"m","max_tokens":9,"user":"u","messages":[
      {"role":"system","content":"sys"},{"role":"user","content":"hello"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "provider/claude");
  EXPECT_EQ(server_->last_target(), "/v1/messages");
  EXPECT_EQ(server_->last_header("x-api-key"), "sk-ant-secret");
  EXPECT_EQ(server_->last_header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(server_->last_authorization(), "");
  json::value sent = json::parse(server_->last_body());
  EXPECT_EQ(sent.at("model"), "claude-x");
  EXPECT_EQ(sent.at("system"), "sys");
  EXPECT_EQ(sent.at("max_tokens"), 9);
  EXPECT_EQ(sent.at("metadata").at("user_id"), "u");
  json::value out = json::parse(r.body);
  EXPECT_EQ(out.at("object"), "chat.completion");
  const auto& choice = out.at("choices").at(0);
  EXPECT_EQ(choice.at("finish_reason"), "tool_calls");
  EXPECT_EQ(choice.at("message").at("content"), "Hi");
  EXPECT_EQ(choice.at("message").at("tool_calls").at(0).at("function").at("arguments"),
            R"({"city":"Paris"})");
  EXPECT_EQ(out.at("usage").at("prompt_tokens"), 10);
  EXPECT_EQ(Metric("kinference_prompt_tokens_total" + kSeries), 10);
  EXPECT_EQ(Metric("kinference_cached_tokens_total" + kSeries), 6);
  EXPECT_EQ(Metric("kinference_completion_tokens_total" + kSeries), 5);
}

TEST_F(AnthropicProviderTest, ChatStreamIsTranslatedEventByEvent) {
  server_->set_response(200, "text/event-stream", kStream);
  auto r = Post(
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(server_->last_body()).at("stream"), true);
  EXPECT_EQ(json::parse(server_->last_body()).at("max_tokens"), 4096);  // the default
  std::vector<json::value> chunks;
  size_t at = 0;
  while ((at = r.body.find("data: ", at)) != std::string::npos) {
    size_t end = r.body.find("\n\n", at);
    std::string data = r.body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") break;
    chunks.push_back(json::parse(data));
  }
  EXPECT_NE(at, std::string::npos) << "no [DONE]: " << r.body;
  ASSERT_EQ(chunks.size(), 5u) << r.body;  // role, reasoning, text, finish, usage
  EXPECT_EQ(chunks[0].at("choices").at(0).at("delta").at("role"), "assistant");
  EXPECT_EQ(chunks[1].at("choices").at(0).at("delta").at("reasoning_content"), "Let me think");
  EXPECT_EQ(chunks[2].at("choices").at(0).at("delta").at("content"), "Hello");
  EXPECT_EQ(chunks[3].at("choices").at(0).at("finish_reason"), "stop");
  EXPECT_EQ(chunks[4].at("usage").at("prompt_tokens"), 33);
  EXPECT_EQ(chunks[4].at("usage").at("prompt_tokens_details").at("cached_tokens"), 20);
  EXPECT_EQ(Metric("kinference_prompt_tokens_total" + kSeries), 33);
  EXPECT_EQ(Metric("kinference_cached_tokens_total" + kSeries), 20);
  EXPECT_EQ(Metric("kinference_time_to_first_token_seconds_count{model=\"m\"}"), 1);
  // Without include_usage the usage chunk is dropped.
  auto plain = Post(R"({"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(plain.body.find("\"usage\""), std::string::npos) << plain.body;
  EXPECT_NE(plain.body.find("[DONE]"), std::string::npos);
}

TEST_F(AnthropicProviderTest, MessagesStreamIsPassedThroughByteForByte) {
  server_->set_response(200, "text/event-stream", kStream);
  http::Headers h;
  h.Add("anthropic-version", "2023-06-01");
  h.Add("anthropic-beta", "interleaved-thinking-2025-05-14");
  std::string body = kMessages;
  body.insert(body.size() - 1, R"(,"stream":true)");
  auto r = Post(body, h, "/v1/messages");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, kStream);
  json::value sent = json::parse(server_->last_body());
  EXPECT_EQ(sent.at("model"), "claude-x");
  EXPECT_EQ(sent.at("thinking").at("budget_tokens"), 1024);  // the client's body, as is
  EXPECT_FALSE(sent.as_object().contains("stream_options"));
  EXPECT_EQ(server_->last_header("anthropic-beta"), "interleaved-thinking-2025-05-14");
  EXPECT_EQ(server_->last_header("x-api-key"), "sk-ant-secret");
  // Observed all the same: usage counted once, TTFT and outcome recorded.
  EXPECT_EQ(Metric("kinference_prompt_tokens_total" + kSeries), 33);
  EXPECT_EQ(Metric("kinference_cached_tokens_total" + kSeries), 20);
  EXPECT_EQ(Metric("kinference_completion_tokens_total" + kSeries), 12);
  EXPECT_EQ(Metric("kinference_time_to_first_token_seconds_count{model=\"m\"}"), 1);
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"provider/claude\",strategy="
                   "\"predicted-ttft\",outcome=\"success\"}"),
            1);
}

// A provider's error event mid-stream reaches a passthrough client as Anthropic's error
// event with the provider's error type, in the gateway's words: the provider's message
// (here with its key and an internal address) goes to the log only.
TEST_F(AnthropicProviderTest, MessagesStreamErrorEventIsTheGatewaysOwn) {
  const std::string head = kStream.substr(0, kStream.find("event: content_block_start"));
  server_->set_response(
      200, "text/event-stream",
      head + "event: error\n" +
          R"(data: {"type":"error","error":{"type":"overloaded_error","message":"node 10.1.2.3 busy; key sk-ant-secret"}})" +
          "\n\n");
  std::string body = kMessages;
  body.insert(body.size() - 1, R"(,"stream":true)");
  http::Headers h;
  h.Add("x-request-id", "client-req-1");
  auto r = Post(body, h, "/v1/messages");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.substr(0, head.size()), head);  // events before the error: as they came
  EXPECT_EQ(r.body.find("10.1.2.3"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("sk-ant-secret"), std::string::npos) << r.body;
  const size_t at = r.body.find("event: error\ndata: ");
  ASSERT_NE(at, std::string::npos) << r.body;
  const size_t data = at + std::string("event: error\ndata: ").size();
  json::value err = json::parse(r.body.substr(data, r.body.find("\n\n", data) - data));
  EXPECT_EQ(err.at("type"), "error");
  EXPECT_EQ(err.at("error").at("type"), "overloaded_error");
  EXPECT_NE(std::string(err.at("error").at("message").as_string()).find("client-req-1"),
            std::string::npos)
      << r.body;
}

TEST_F(AnthropicProviderTest, MessagesWholeResponseIsPassedThroughUnchanged) {
  server_->set_response(200, "application/json", kMessage);
  auto r = Post(kMessages, {}, "/v1/messages");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, kMessage);
  EXPECT_EQ(server_->last_header("anthropic-version"), "2023-06-01");  // the provider's
  EXPECT_EQ(Metric("kinference_prompt_tokens_total" + kSeries), 10);
  EXPECT_EQ(Metric("kinference_cached_tokens_total" + kSeries), 6);
}

TEST_F(AnthropicProviderTest, ErrorsMapToEachFrontsShape) {
  const std::string overloaded =
      R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})";
  server_->set_response(529, "application/json", overloaded);
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body).at("error").at("type"), "overloaded_error") << r.body;
  EXPECT_EQ(r.body.find("Overloaded"), std::string::npos) << r.body;  // the gateway's words
  auto m = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(m.status, 529);
  auto body = json::parse(m.body);
  EXPECT_EQ(body.at("type"), "error") << m.body;
  EXPECT_EQ(body.at("error").at("type"), "overloaded_error") << m.body;
  EXPECT_EQ(m.body.find("Overloaded"), std::string::npos) << m.body;
}

// A 503 from in front of the provider (a proxy, a load balancer) is overload on
// /v1/messages, 529 overloaded_error as on the translated path; 504 is timeout_error.
TEST_F(AnthropicProviderTest, PassthroughUnavailableIsOverloadedAndTimeoutIsTimeoutError) {
  server_->set_response(503, "application/json",
                        R"({"type":"error","error":{"type":"api_error","message":"at 10.0.0.7"}})");
  auto m = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(m.status, 529) << m.body;
  EXPECT_EQ(json::parse(m.body).at("error").at("type"), "overloaded_error") << m.body;
  EXPECT_EQ(m.body.find("10.0.0.7"), std::string::npos) << m.body;
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 503) << r.body;  // the OpenAI front's status for it
  server_->set_response(504, "text/html", "<html>gateway timeout</html>");
  auto t = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(t.status, 504) << t.body;
  EXPECT_EQ(json::parse(t.body).at("error").at("type"), "timeout_error") << t.body;
}

// Anthropic's 429 reaches the client with its retry-after (what the SDK waits for) on both
// fronts (one gateway each: after it the provider cools down); its anthropic-ratelimit-*
// headers describe the gateway's account and stay.
TEST_F(AnthropicProviderTest, RateLimitKeepsTheProvidersRetryAfter) {
  server_->add_response_header("retry-after", "17");
  server_->add_response_header("anthropic-ratelimit-requests-remaining", "0");
  server_->set_response(
      429, "application/json",
      R"({"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}})");
  auto m = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(m.status, 429) << m.body;
  EXPECT_EQ(m.headers.Find("retry-after"), "17");
  EXPECT_EQ(m.headers.Find("anthropic-ratelimit-requests-remaining"), "");
  EXPECT_EQ(json::parse(m.body).at("error").at("type"), "rate_limit_error") << m.body;
  EXPECT_EQ(server_->requests(), 1);  // not retried
  // Cooling down now: the next request is the gateway's own refusal, the provider is not
  // called (docs/reliability.md "Cooldown").
  auto again = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(again.status, 529) << again.body;
  EXPECT_NE(again.headers.Find("retry-after"), "");
  EXPECT_EQ(server_->requests(), 1);
}

TEST_F(AnthropicProviderTest, RateLimitKeepsTheProvidersRetryAfterOnTheChatFront) {
  server_->add_response_header("retry-after", "17");
  server_->set_response(
      429, "application/json",
      R"({"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}})");
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(r.headers.Find("retry-after"), "17");
  EXPECT_EQ(server_->requests(), 1);  // not retried
}

// A plain 500 from the provider is a bad gateway in each front's shape, in the gateway's
// words: the class is not overload, and the provider's text never reaches the client.
TEST_F(AnthropicProviderTest, ServerErrorIsABadGatewayWithoutTheProvidersText) {
  server_->set_response(
      500, "application/json",
      R"({"type":"error","error":{"type":"api_error","message":"internal at 10.0.0.7"}})");
  auto r = Post(kChat);
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_EQ(json::parse(r.body).at("error").at("type"), "api_error") << r.body;
  EXPECT_EQ(r.body.find("10.0.0.7"), std::string::npos) << r.body;
  auto m = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(m.status, 502) << m.body;
  EXPECT_EQ(json::parse(m.body).at("error").at("type"), "api_error") << m.body;
  EXPECT_EQ(m.body.find("10.0.0.7"), std::string::npos) << m.body;
}

// The provider rejecting the gateway's key is the gateway's fault, not the client's: 502
// on both fronts (passthrough included), never the provider's authentication_error, and
// a circuit-breaker failure.
TEST_F(AnthropicProviderTest, RejectedKeyIsABadGatewayOnBothFronts) {
  server_->set_response(
      401, "application/json",
      R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})");
  const std::string message = "upstream provider/claude rejected the gateway's credentials (401)";
  auto a = Post(kChat);
  EXPECT_EQ(a.status, 502) << a.body;
  EXPECT_EQ(json::parse(a.body).at("error").at("message").as_string(), message);
  EXPECT_EQ(json::parse(a.body).at("error").at("code"), 502);
  auto m = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(m.status, 502) << m.body;
  EXPECT_EQ(
      json::parse(m.body),
      json::parse(R"({"type":"error","error":{"type":"api_error","message":")" + message + "\"}}"));
  server_->set_response(
      403, "application/json",
      R"({"type":"error","error":{"type":"permission_error","message":"not allowed"}})");
  std::string stream = kMessages;
  stream.insert(stream.size() - 1, R"(,"stream":true)");
  auto s = Post(stream, {}, "/v1/messages");
  EXPECT_EQ(s.status, 502) << s.body;
  EXPECT_NE(s.body.find("credentials (403)"), std::string::npos) << s.body;
  EXPECT_EQ(s.body.find("not allowed"), std::string::npos) << s.body;
  // Four consecutive failures so far; the default breaker opens at five.
  auto c = Post(kChat);
  EXPECT_EQ(c.status, 502);
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"provider/claude\"}"), 1);
  EXPECT_EQ(Post(kChat).status, 502);
  EXPECT_EQ(Metric("kinference_endpoint_healthy{endpoint=\"provider/claude\"}"), 0);
  EXPECT_EQ(server_->requests(), 5);
}

// A 200 whose body is not a Messages object: 502 in Anthropic's shape on passthrough,
// as on the translated path; a valid body stays byte-identical (test above).
TEST_F(AnthropicProviderTest, MalformedWholeMessageIsABadGatewayOnPassthrough) {
  for (const char* body : {"<html>oops</html>", R"({"id":"x"})"}) {
    server_->set_response(200, "application/json", body);
    auto m = Post(kMessages, {}, "/v1/messages");
    EXPECT_EQ(m.status, 502) << m.body;
    EXPECT_EQ(json::parse(m.body).at("type"), "error") << m.body;
    EXPECT_EQ(json::parse(m.body).at("error").at("type"), "api_error");
    auto c = Post(kChat);
    EXPECT_EQ(c.status, 502) << c.body;
  }
}

// A 4xx whose body is no API error (a proxy's HTML page in front of the provider): status
// kept, the gateway's words in Anthropic's shape on passthrough (streamed or not) and in
// OpenAI's on the translated chat front; never the page or the address it names. An
// Anthropic error body is still passed through, its words included.
TEST_F(AnthropicProviderTest, NonApi4xxBodyIsReplacedInAnthropicShapeOnPassthrough) {
  server_->set_response(404, "text/html", "<html><body>404 nginx at 10.1.2.3</body></html>");
  std::string stream = kMessages;
  stream.insert(stream.size() - 1, R"(,"stream":true)");
  for (const std::string& body : {kMessages, stream}) {
    auto m = Post(body, {}, "/v1/messages");
    EXPECT_EQ(m.status, 404) << m.body;
    EXPECT_EQ(m.headers.Find("content-type"), "application/json");
    EXPECT_EQ(m.body.find("10.1.2.3"), std::string::npos) << m.body;
    json::value v = json::parse(m.body);
    EXPECT_EQ(v.at("type"), "error") << m.body;
    EXPECT_EQ(v.at("error").at("type"), "not_found_error") << m.body;
    EXPECT_NE(v.at("error").at("message").as_string().find("upstream status 404"),
              std::string::npos)
        << m.body;
  }
  auto c = Post(kChat);
  EXPECT_EQ(c.status, 404) << c.body;
  EXPECT_EQ(c.body.find("10.1.2.3"), std::string::npos) << c.body;
  EXPECT_TRUE(json::parse(c.body).at("error").is_object()) << c.body;
  const std::string anthropic_error =
      R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}})";
  server_->set_response(400, "application/json", anthropic_error);
  auto a = Post(kMessages, {}, "/v1/messages");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.body, anthropic_error);
}

// A streamed chat whose upstream sent garbage ends with an error event saying 502, as the
// same failure unstreamed.
TEST_F(AnthropicProviderTest, GarbageStreamErrorEventSaysBadGateway) {
  server_->set_response(200, "text/event-stream", "this is not an event stream\n\n");
  auto r = Post(R"({"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(r.status, 200);
  size_t at = r.body.find("data: {\"error\"");
  ASSERT_NE(at, std::string::npos) << r.body;
  json::value err = json::parse(r.body.substr(at + 6, r.body.find("\n\n", at) - at - 6));
  EXPECT_EQ(err.at("error").at("code"), 502) << r.body;
  server_->set_response(200, "application/json", "this is not a message");
  EXPECT_EQ(Post(kChat).status, 502);
}

TEST_F(AnthropicProviderTest, TruncatedStreamEndsWithAnError) {
  std::string cut = kStream.substr(0, kStream.find("event: message_delta"));
  server_->set_response(200, "text/event-stream", cut);
  auto r = Post(R"({"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_NE(r.body.find(R"("error")"), std::string::npos) << r.body;
  std::string body = kMessages;
  body.insert(body.size() - 1, R"(,"stream":true)");
  auto m = Post(body, {}, "/v1/messages");
  EXPECT_EQ(m.body.substr(0, cut.size()), cut);
  EXPECT_NE(m.body.find("event: error"), std::string::npos) << m.body;
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"provider/claude\",strategy="
                   "\"predicted-ttft\",outcome=\"error\"}"),
            2);
}

TEST_F(AnthropicProviderTest, CompletionsAreRefused) {
  auto r = Post(R"({"model":"m","prompt":"x"})", {}, "/v1/completions");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("/v1/chat/completions"), std::string::npos);
  EXPECT_EQ(server_->requests(), 0);
}

// A policy that would reject every candidate does not see the Anthropic provider for
// /v1/completions (it could never serve it): the documented 400, not the policy's 403.
class AnthropicProviderPolicyTest : public AnthropicProviderTest {
 protected:
  void AddPools(GatewayConfig& c) override {
    char tmpl[] = "/tmp/kinference-anth-provider-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::string path = dir_ + "/no-providers.yaml";
    std::ofstream(path) << "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\n"
                           "metadata: {name: no-providers}\nspec:\n  mode: enforce\n"
                           "  constraints: {exclude: {classes: [provider]}}\n";
    c.policies.files = {path};
    c.policies.reload_interval_s = 0;
  }
  void TearDown() override {
    AnthropicProviderTest::TearDown();
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(AnthropicProviderPolicyTest, CompletionsAreRefusedBeforePolicies) {
  auto r = Post(R"({"model":"m","prompt":"x"})", {}, "/v1/completions");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("which has no /v1/completions"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("provider/claude"), std::string::npos) << r.body;
  // Chat requests still meet the policy.
  auto c = Post(kChat);
  EXPECT_EQ(c.status, 403) << c.body;
  EXPECT_NE(c.body.find("provider/claude"), std::string::npos) << c.body;
  EXPECT_EQ(server_->requests(), 0);
}

TEST_F(AnthropicProviderTest, UntranslatableChatIsA400) {
  auto r = Post(R"({"model":"m","n":3,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(server_->requests(), 0);
}

// A request only Anthropic can take (an image block) beside a local pool: it goes to the
// Anthropic provider natively, never to the pool; a translatable one may go to either.
class AnthropicProviderMixedTest : public AnthropicProviderTest {
 protected:
  void AddPools(GatewayConfig& c) override {
    local_ = std::make_unique<testing::FakeUpstream>(io(), testing::FakeMode::kOk);
    OnStop([this] { local_->Stop(); });
    c.pools.push_back(PoolConfig{
        "p", "m", {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(local_->port()), "t")}});
  }
  std::unique_ptr<testing::FakeUpstream> local_;
};

TEST_F(AnthropicProviderMixedTest, UntranslatableMessagesGoToTheAnthropicProviderOnly) {
  server_->set_response(200, "application/json", kMessage);
  const std::string image = R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":[
      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},
      {"type":"text","text":"what is this?"}]}]})";
  for (int i = 0; i < 4; ++i) {
    auto r = Post(image, {}, "/v1/messages");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.Find("x-kinference-endpoint"), "provider/claude");
    EXPECT_EQ(r.body, kMessage);
  }
  EXPECT_EQ(server_->requests(), 4);
  EXPECT_EQ(local_->requests(), 0);
  EXPECT_EQ(json::parse(server_->last_body()).at("messages").at(0).at("content").at(0).at("type"),
            "image");
}

TEST_F(AnthropicProviderTest, UntranslatableMessagesWithoutAnthropicProviderAre400) {
  auto r = Post(R"({"model":"other","max_tokens":8,"messages":[{"role":"user","content":[
      {"type":"document","source":{"type":"base64","media_type":"application/pdf",
       "data":"JVBERi0="}}]}]})",
                {}, "/v1/messages");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body).at("error").at("type"), "invalid_request_error");
  EXPECT_NE(r.body.find("PDF"), std::string::npos) << r.body;
}

// A document with a text source reaches an Anthropic provider as the client sent it (the
// native passthrough), and the same body to a model without one is served as text.
TEST_F(AnthropicProviderTest, TextDocumentPassesThroughToTheAnthropicProvider) {
  server_->set_response(200, "application/json", kMessage);
  const std::string doc = R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":[
      {"type":"document","title":"T","source":{"type":"text","media_type":"text/plain",
       "data":"The sky is blue."}},{"type":"text","text":"Summarise."}]}]})";
  auto r = Post(doc, {}, "/v1/messages");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, kMessage);
  auto sent = json::parse(server_->last_body());
  EXPECT_EQ(sent.at("messages").at(0).at("content").at(0).at("type"), "document");
  EXPECT_EQ(sent.at("messages").at(0).at("content").at(0).at("source").at("data"),
            "The sky is blue.");
}

}  // namespace
}  // namespace kinference::gateway

namespace kinference::gateway {
namespace {

// With accounting: the provider's cache writes (cache_creation_input_tokens, which
// OpenAI's usage shape cannot carry) are billed at the cache-write price, its cache reads
// at the cached price, on both fronts, streamed and whole.
class AnthropicProviderAccountingTest : public AnthropicProviderTest {
 protected:
  void AddPools(GatewayConfig& c) override {
    c.accounting.enabled = true;
    c.accounting.ledger.store = accounting::StoreKind::kNone;
    accounting::PriceEntry e;
    e.provider = "claude";
    e.model = "m";
    // USD 3 / 0.30 / 3.75 / 15 per million tokens, in nano-USD per million.
    e.price = {.input = 3'000'000'000,
               .cached_input = 300'000'000,
               .cache_write = 3'750'000'000,
               .output = 15'000'000'000};
    c.accounting.prices = accounting::PriceTable({e});
  }
};

TEST_F(AnthropicProviderAccountingTest, CacheWritesAndReadsBilledOnceOnBothFronts) {
  http::Headers h;
  h.Add("anthropic-version", "2023-06-01");
  // kStream: input 10, cache writes 3, cache reads 20, output 12.
  server_->set_response(200, "text/event-stream", kStream);
  ASSERT_EQ(
      Post(R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})").status,
      200);
  std::string streamed = kMessages;
  streamed.insert(streamed.size() - 1, R"(,"stream":true)");
  ASSERT_EQ(Post(streamed, h, "/v1/messages").status, 200);
  // Whole messages: input 4, cache writes 7, cache reads 6, output 5.
  std::string whole = kMessage;
  const std::string zero = R"("cache_creation_input_tokens":0)";
  whole.replace(whole.find(zero), zero.size(), R"("cache_creation_input_tokens":7)");
  server_->set_response(200, "application/json", whole);
  ASSERT_EQ(Post(kChat).status, 200);
  ASSERT_EQ(Post(kMessages, h, "/v1/messages").status, 200);
  EXPECT_EQ(Metric("kinference_cache_creation_tokens_total" + kSeries), 2 * 3 + 2 * 7);
  EXPECT_EQ(Metric("kinference_cached_tokens_total" + kSeries), 2 * 20 + 2 * 6);
  // Per stream: 10 * 3000 + 20 * 300 + 3 * 3750 + 12 * 15000 = 227250 nano-USD;
  // per whole message: 4 * 3000 + 6 * 300 + 7 * 3750 + 5 * 15000 = 115050 nano-USD.
  EXPECT_NEAR(Metric("kinference_cost_usd_total" + kSeries), 2 * 227250e-9 + 2 * 115050e-9, 1e-12);
}

}  // namespace
}  // namespace kinference::gateway
