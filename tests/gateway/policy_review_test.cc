// Review fixes on the gateway's policy path: PII anywhere in the body (OpenAI and
// Anthropic fronts, the classifier's input), reference checks at start-up and reload,
// /debug/decisions per tenant, and the per-request counters.
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

TEST_F(PolicyProxyTest, UnknownReferencesFailStartupAndReload) {
  FakeUpstream& local = Fake();
  std::string path = Write("p.yaml", IncludePolicy("to-ghost", "{providers: [ghost]}"));
  GatewayConfig c = Base({path});
  AddPool(c, "local", "m", local);
  try {
    Gateway g(io(), c);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "spec.constraints.include.providers[0]: unknown provider 'ghost'"),
              std::string::npos)
        << e.what();
  }
  Write("p.yaml", IncludePolicy("to-local", "{pools: [local]}"));
  Start(c);
  EXPECT_EQ(Generation(), 1);
  Write("p.yaml", IncludePolicy("to-typo", "{pools: [locl]}") + "# edited\n");
  ASSERT_TRUE(WaitUntil([&] { return Metric("\nkinference_policy_reload_failures_total") == 1; }));
  EXPECT_EQ(Generation(), 1);
  auto r = Post(Chat("m", "hello"));
  EXPECT_NE(DecisionHeader(r).find("generation=1; policies=to-local"), std::string::npos)
      << DecisionHeader(r);
  // An alternative no endpoint serves is rejected too; match.models only warns.
  Write("p.yaml",
        "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: alt}\n"
        "spec: {alternatives: [{model: nowhere}]}\n");
  ASSERT_TRUE(WaitUntil([&] { return Metric("\nkinference_policy_reload_failures_total") == 2; }));
  Write("p.yaml",
        "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: ahead}\n"
        "spec: {match: {models: [next-year]}}\n");
  ASSERT_TRUE(WaitUntil([&] { return Generation() == 2; }));
}

class DebugDecisionsTest : public PolicyProxyTest {
 protected:
  static TenantKey Key(const std::string& key, const std::string& tenant) {
    return TenantKey{Sha256(key), tenant};
  }
  void StartWithTenants() {
    FakeUpstream& local = Fake();
    GatewayConfig c = Base({});
    AddPool(c, "local", "m", local);
    c.tenants.enabled = true;
    c.tenants.keys = {Key("k-acme", "acme"), Key("k-globex", "globex"), Key("k-ops", "ops")};
    c.tenants.anonymous_tenant = "free";
    c.policies.debug_admin_tenants = {"ops"};
    Start(c);
    for (const char* key : {"k-acme", "k-globex"}) {
      ASSERT_EQ(Post(Chat("m", "hi"), Bearer(key)).status, 200);
    }
    ASSERT_EQ(Post(Chat("m", "hi")).status, 200);  // anonymous: tenant "free"
  }
  static http::Headers Bearer(const std::string& key) {
    http::Headers h;
    h.Add("authorization", "Bearer " + key);
    return h;
  }
  std::vector<std::string> TenantsSeenBy(const http::Headers& h) {
    auto r = Call("GET", "/debug/decisions", "", h);
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<std::string> out;
    json::value body = json::parse(r.body);
    for (const auto& d : body.at("decisions").as_array())
      out.emplace_back(d.at("tenant").as_string());
    return out;
  }
};

TEST_F(DebugDecisionsTest, TenantsSeeOnlyTheirOwnAdminsSeeAll) {
  StartWithTenants();
  auto anon = Call("GET", "/debug/decisions");
  EXPECT_EQ(anon.status, 401) << anon.body;
  EXPECT_EQ(json::parse(anon.body).at("error").at("type").as_string(), "authentication_error");
  EXPECT_EQ(Call("GET", "/debug/decisions", "", Bearer("wrong")).status, 401);
  EXPECT_EQ(TenantsSeenBy(Bearer("k-acme")), std::vector<std::string>{"acme"});
  EXPECT_EQ(TenantsSeenBy(Bearer("k-globex")), std::vector<std::string>{"globex"});
  EXPECT_EQ(TenantsSeenBy(Bearer("k-ops")), (std::vector<std::string>{"acme", "globex", "free"}));
}

// Counters are per request: "removed" once per request however many endpoints a policy
// removed; a rejected request counts as "matched" for the policies that matched.
TEST_F(PolicyProxyTest, CountersArePerRequest) {
  FakeUpstream& local = Fake();
  FakeUpstream& ext1 = Fake();
  FakeUpstream& ext2 = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddPool(c, "local", "m", local);
  AddProvider(c, "ext1", "m", ext1);
  AddProvider(c, "ext2", "m", ext2);
  Start(c);
  ASSERT_EQ(Post(Chat("m", "mail bob@example.org")).status, 200);
  EXPECT_EQ(Decisions().back().at("removed").as_array().size(), 2u);
  EXPECT_EQ(PolicyCount("pii-local-only", "removed"), 1);
  EXPECT_EQ(PolicyCount("pii-local-only", "matched"), 1);
}

TEST_F(PolicyProxyTest, RejectedRequestsCountAsMatched) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  EXPECT_EQ(Post(Chat("m", "mail bob@example.org")).status, 403);
  EXPECT_EQ(PolicyCount("pii-local-only", "rejected"), 1);
  EXPECT_EQ(PolicyCount("pii-local-only", "matched"), 1);
  EXPECT_EQ(Decisions().back().at("rejected_by").as_string(), "pii-local-only");
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
