// What taggers and the external classifier scan on the request path: every key and
// string of the client's body (OpenAI and Anthropic fronts, not only message text) and,
// on /v1/messages, the anthropic-version and anthropic-beta header values.
#include "policy_fixture.h"

namespace kinference::gateway {
namespace {

using namespace policy_testing;  // NOLINT: the shared fixture and helpers

std::string ChatWithToolCall(const std::string& arguments) {
  json::object call{{"id", "c1"},
                    {"type", "function"},
                    {"function", json::object{{"name", "send"}, {"arguments", arguments}}}};
  json::array messages{json::object{{"role", "user"}, {"content", "send it"}},
                       json::object{{"role", "assistant"}, {"tool_calls", json::array{call}}},
                       json::object{{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "ok"}}};
  return json::serialize(json::object{{"model", "m"}, {"messages", messages}});
}

// PII only outside message text never reaches a provider (403 with only a provider).
TEST_F(PolicyProxyTest, PiiOutsideMessageTextIsTagged) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  EXPECT_EQ(Post(ChatWithToolCall(R"({"to":"bob@example.org"})")).status, 403);
  EXPECT_EQ(Post(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)"
                 R"("user":"carol@example.org"})")
                .status,
            403);
  EXPECT_EQ(
      Post(R"({"model":"m","prompt":["hello","card 4111 1111 1111 1111"]})", {}, "/v1/completions")
          .status,
      403);
  EXPECT_EQ(
      Post(R"({"model":"m","prompt":"hello","suffix":"dave@example.org"})", {}, "/v1/completions")
          .status,
      403);
  // /v1/messages: metadata.user_id and a tool description of the Anthropic body.
  EXPECT_EQ(Post(R"({"model":"m","max_tokens":16,"metadata":{"user_id":"eve@example.org"},)"
                 R"("messages":[{"role":"user","content":"hi"}]})",
                 {}, "/v1/messages")
                .status,
            403);
  EXPECT_EQ(Post(R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],)"
                 R"("tools":[{"name":"f","description":"mail f@example.org","input_schema":{}}]})",
                 {}, "/v1/messages")
                .status,
            403);
  EXPECT_EQ(ext.requests(), 0);
  EXPECT_EQ(Post(ChatWithToolCall(R"({"to":"nobody"})")).status, 200);
  EXPECT_EQ(ext.requests(), 1);
}

// A datum split across neighbouring values of the body (docs/policy.md, "Taggers") is
// found on the request path too: the gate hands the scan's value spans to the pii tagger.
TEST_F(PolicyProxyTest, PiiSplitAcrossNeighbouringMessagesIsTagged) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  auto two = [](const std::string& first, const std::string& second) {
    json::array messages{json::object{{"role", "user"}, {"content", first}},
                         json::object{{"role", "user"}, {"content", second}}};
    return json::serialize(json::object{{"model", "m"}, {"messages", messages}});
  };
  auto r = Post(two("my card is 4111 1111", "1111 1111"));
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(Post(two("SSN 123-45", "-6789")).status, 403);
  EXPECT_EQ(Post(R"({"model":"m","max_tokens":16,"messages":[)"
                 R"({"role":"user","content":"my card is 4111 1111"},)"
                 R"({"role":"assistant","content":"1111 1111"}]})",
                 {}, "/v1/messages")
                .status,
            403);
  EXPECT_EQ(ext.requests(), 0);
  EXPECT_EQ(Post(two("my card is", "on file")).status, 200);
  EXPECT_EQ(ext.requests(), 1);
}

// Split across the user's turns with the assistant's between them: the gate hands the
// scan's per-role spans to the pii tagger too (both fronts).
TEST_F(PolicyProxyTest, PiiSplitAcrossTheUsersTurnsAroundAnAssistantTurnIsTagged) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  const std::string turns = R"("messages":[{"role":"user","content":"my card is 4111 1111"},)"
                            R"({"role":"assistant","content":"Go on."},)"
                            R"({"role":"user","content":"1111 1111"}]})";
  EXPECT_EQ(Post(R"({"model":"m",)" + turns).status, 403);
  EXPECT_EQ(Post(R"({"model":"m","max_tokens":16,)" + turns, {}, "/v1/messages").status, 403);
  EXPECT_EQ(ext.requests(), 0);
}

// Content no tagger reads (docs/policy.md, "onUnscannableContent"): an image part and a
// token-id completions prompt.
const std::string kImageChat =
    R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"read this"},)"
    R"({"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]})";
const std::string kTokenIdPrompt = R"({"model":"m","prompt":[19,4111,1111,1111,1111]})";

// With treatAsTagged, unscannable content never reaches a provider (403 with only a
// provider): the gate hands the scan's unscannable kinds to the policies.
TEST_F(PolicyProxyTest, UnscannableContentTreatedAsTaggedStaysOffProviders) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({Write("closed.yaml", R"(apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: pii-closed}
spec:
  match: {tags: {anyOf: [pii]}}
  constraints: {exclude: {classes: [provider]}}
  onUnscannableContent: treatAsTagged
)")});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  auto r = Post(kImageChat);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(DecisionHeader(r).find("pii-closed"), std::string::npos) << DecisionHeader(r);
  EXPECT_EQ(Post(kTokenIdPrompt, {}, "/v1/completions").status, 403);
  EXPECT_EQ(ext.requests(), 0);
  EXPECT_EQ(Post(Chat("m", "hi")).status, 200);
  EXPECT_EQ(ext.requests(), 1);
}

// With ignore (the default) the same requests pass on their text's tags.
TEST_F(PolicyProxyTest, UnscannableContentIgnoredByDefault) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({Write("open.yaml", R"(apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: pii-open}
spec:
  match: {tags: {anyOf: [pii]}}
  constraints: {exclude: {classes: [provider]}}
)")});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  EXPECT_EQ(Post(kImageChat).status, 200);
  EXPECT_EQ(Post(kTokenIdPrompt, {}, "/v1/completions").status, 200);
  EXPECT_EQ(ext.requests(), 2);
}

// The shipped example is fail-closed (onUnscannableContent: treatAsTagged): an image or a
// token-id prompt with only a provider serving the model is refused, never sent there.
TEST_F(PolicyProxyTest, ShippedPiiLocalOnlyKeepsUnscannableContentOffProviders) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  EXPECT_EQ(Post(kImageChat).status, 403);
  EXPECT_EQ(Post(kTokenIdPrompt, {}, "/v1/completions").status, 403);
  EXPECT_EQ(ext.requests(), 0);
}

// The classifier receives the original Anthropic body's keys and strings on /v1/messages.
TEST_F(ClassifierTest, ClassifierGetsEveryStringOfTheOriginalBody) {
  StartWithClassifier(/*hold=*/false, "[]", "reject");
  auto r = Post(R"({"model":"m","max_tokens":16,"metadata":{"user_id":"u-1"},)"
                R"("messages":[{"role":"user","content":"hi"}]})",
                {}, "/v1/messages");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(classifier_->last_body()).at("text").as_string(),
            "model\nmax_tokens\nmetadata\nmessages\nm\n16\nuser_id\nu-1\nrole\ncontent\nuser\nhi");
}

// /v1/messages: the client's anthropic-version and anthropic-beta header values (passed
// upstream to Anthropic providers as sent) are scanned like the body, so PII there is
// tagged: 403 with only a provider, nothing sent upstream.
TEST_F(PolicyProxyTest, PiiInAnthropicHeadersIsTagged) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  auto headers = [](const std::string& version, const std::string& beta) {
    http::Headers h;
    h.Add("anthropic-version", version);
    h.Add("anthropic-beta", beta);
    return h;
  };
  auto beta = Post(Messages("m", "hi"), headers("2023-06-01", "tools-2024-04-04,bob@example.org"),
                   "/v1/messages");
  EXPECT_EQ(beta.status, 403) << beta.body;
  EXPECT_EQ(json::parse(beta.body).at("error").at("type").as_string(), "permission_error");
  EXPECT_EQ(Decisions().back().at("rejected_by").as_string(), "pii-local-only");
  EXPECT_EQ(
      Post(Messages("m", "hi"), headers("carol@example.org", "tools-2024-04-04"), "/v1/messages")
          .status,
      403);
  EXPECT_EQ(ext.requests(), 0);
  // Ordinary values pass; other fronts never forward these headers, so they are not scanned.
  EXPECT_EQ(Post(Messages("m", "hi"), headers("2023-06-01", "interleaved-thinking-2025-05-14"),
                 "/v1/messages")
                .status,
            200);
  EXPECT_EQ(Post(Chat("m", "hi"), headers("2023-06-01", "dave@example.org")).status, 200);
  EXPECT_EQ(ext.requests(), 2);
}

// The classifier's text ends with those two header values, and no other header's.
TEST_F(ClassifierTest, ClassifierGetsTheAnthropicHeaderValues) {
  StartWithClassifier(/*hold=*/false, "[]", "reject");
  http::Headers h;
  h.Add("anthropic-version", "2023-06-01");
  h.Add("x-other", "not-scanned");
  h.Add("Anthropic-Beta", "tools-2024-04-04");
  auto r = Post(Messages("m", "hi"), h, "/v1/messages");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(classifier_->last_body()).at("text").as_string(),
            "model\nmax_tokens\nmessages\nm\n16\nrole\ncontent\nuser\nhi\n2023-06-01\n"
            "tools-2024-04-04");
}

}  // namespace
}  // namespace kinference::gateway
