// InferencePolicy on the gateway's request path, end to end against in-process fake
// upstreams: the three examples in examples/policies/, 403s in the OpenAI and Anthropic
// shapes, dry-run, the decision header, /debug/decisions, the per-policy counters, hot
// reload, the external classifier (timeout, failure handling) and the trusted tag header.
#include "policy_fixture.h"

namespace kinference::gateway {
namespace {

using namespace policy_testing;  // NOLINT: the shared fixture and helpers

// (a) simple-cheaper-model: a short request without tools goes to the cheaper model
// when its predicted TTFT is within tolerance; long, tool and PII requests stay.
TEST_F(PolicyProxyTest, SimpleRequestGoesToCheaperModel) {
  FakeUpstream& big = Fake();
  FakeUpstream& small = Fake();
  GatewayConfig c = Base({kExamples + "simple-cheaper-model.yaml"});
  AddPool(c, "big", "llama-3.1-70b", big);
  AddPool(c, "small", "llama-3.1-8b", small);
  Start(c);

  auto r = Post(Chat("llama-3.1-70b", "What is the capital of France?"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("x-kinference-model"), "llama-3.1-8b");
  EXPECT_EQ(Endpoint(r), "small/0");
  EXPECT_NE(DecisionHeader(r).find("policies=simple-to-small-model"), std::string::npos)
      << DecisionHeader(r);
  EXPECT_NE(DecisionHeader(r).find("model=llama-3.1-8b"), std::string::npos);
  ASSERT_EQ(small.requests(), 1);
  EXPECT_EQ(json::parse(small.bodies()[0]).at("model").as_string(), "llama-3.1-8b");
  EXPECT_EQ(big.requests(), 0);

  // Long prompt (> 256 estimated tokens), tools, PII: not "simple" -> requested model.
  for (const auto& body : {Chat("llama-3.1-70b", std::string(2000, 'x')),
                           Chat("llama-3.1-70b", "weather?", /*tools=*/true),
                           Chat("llama-3.1-70b", "mail bob@example.org")}) {
    auto s = Post(body);
    ASSERT_EQ(s.status, 200) << s.body;
    EXPECT_EQ(s.headers.Find("x-kinference-model"), "llama-3.1-70b");
    EXPECT_EQ(Endpoint(s), "big/0");
    EXPECT_NE(DecisionHeader(s).find("policies=-"), std::string::npos) << DecisionHeader(s);
  }
  EXPECT_EQ(big.requests(), 3);
  EXPECT_EQ(json::parse(big.bodies()[0]).at("model").as_string(), "llama-3.1-70b");
  EXPECT_EQ(PolicyCount("simple-to-small-model", "matched"), 1);
}

// (a) continued: the cheaper model's replica has a long queue, so its predicted TTFT is
// more than the 0.5 s tolerance worse; the requested model serves.
TEST_F(PolicyProxyTest, CheaperModelOutsideToleranceIsNotChosen) {
  FakeUpstream& big = Fake();
  FakeUpstream& small = Fake();
  small.set_waiting(1000);
  GatewayConfig c = Base({kExamples + "simple-cheaper-model.yaml"});
  AddPool(c, "big", "llama-3.1-70b", big);
  AddPool(c, "small", "llama-3.1-8b", small);
  Start(c);
  http::Response r;
  // Once the busy replica is scraped its prediction jumps past the tolerance.
  ASSERT_TRUE(WaitUntil([&] {
    r = Post(Chat("llama-3.1-70b", "hi"));
    return Endpoint(r) == "big/0";
  })) << DecisionHeader(r);
  EXPECT_EQ(r.headers.Find("x-kinference-model"), "llama-3.1-70b");
  EXPECT_NE(DecisionHeader(r).find("policies=simple-to-small-model"), std::string::npos);
}

// (b) local-queue-before-providers: locals first; a local whose scraped queue exceeds 8
// is excluded and the provider serves.
TEST_F(PolicyProxyTest, LocalQueueAboveThresholdSpillsToProvider) {
  FakeUpstream& local = Fake();
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "local-queue-before-providers.yaml"});
  AddPool(c, "local", "m", local);
  AddProvider(c, "ext", "m", ext);
  Start(c);
  http::Response r;
  ASSERT_TRUE(WaitUntil([&] {  // after the first scrape
    r = Post(Chat("m", "hello"));
    return Endpoint(r) == "local/0";
  }));
  int ext_before = ext.requests();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Endpoint(Post(Chat("m", "hello"))), "local/0");
  EXPECT_EQ(ext.requests(), ext_before);
  auto last = Decisions().back().as_object();
  EXPECT_EQ(last.at("endpoint").as_string(), "local/0");
  EXPECT_EQ(last.at("removed").as_array()[0].at("reason").as_string(),
            "not preferred while preferred candidates remain");

  local.set_waiting(12);
  ASSERT_TRUE(WaitUntil([&] {
    r = Post(Chat("m", "hello"));
    return Endpoint(r) == "provider/ext";
  }));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(ext.bodies().back()).at("model").as_string(), "ext-m");
  last = Decisions().back().as_object();
  EXPECT_EQ(last.at("outcome").as_string(), "routed");
  EXPECT_EQ(last.at("endpoint").as_string(), "provider/ext");
  auto removed = last.at("removed").as_array();
  ASSERT_EQ(removed.size(), 1u) << json::serialize(last);
  EXPECT_EQ(removed[0].at("endpoint").as_string(), "local/0");
  EXPECT_EQ(removed[0].at("policy").as_string(), "local-first-spillover");
  EXPECT_EQ(removed[0].at("reason").as_string(), "queue depth 12 > maxQueueDepth 8");
  EXPECT_GE(PolicyCount("local-first-spillover", "removed"), 1);
  EXPECT_GE(PolicyCount("local-first-spillover", "matched"), 5);

  local.set_waiting(0);
  ASSERT_TRUE(WaitUntil([&] { return Endpoint(Post(Chat("m", "hello"))) == "local/0"; }));
}

// (c) PII: requests carrying PII never reach a provider while a local endpoint exists.
TEST_F(PolicyProxyTest, PiiNeverReachesProvider) {
  FakeUpstream& local = Fake();
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddPool(c, "local", "m", local);
  AddProvider(c, "ext", "m", ext);
  Start(c);
  for (int i = 0; i < 4; ++i) {
    auto r = Post(Chat("m", i % 2 ? "card 4111 1111 1111 1111" : "write to bob@example.org"));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(Endpoint(r), "local/0");
    EXPECT_NE(DecisionHeader(r).find("policies=pii-local-only"), std::string::npos);
  }
  EXPECT_EQ(ext.requests(), 0);
  EXPECT_EQ(local.requests(), 4);
  auto removed = Decisions().back().at("removed").as_array();
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].at("endpoint").as_string(), "provider/ext");
  EXPECT_EQ(removed[0].at("reason").as_string(), "excluded by class provider");
}

// (c) only providers remain: 403 naming the policy, in each API's shape; nothing sent.
TEST_F(PolicyProxyTest, PiiWithOnlyProvidersIs403InOpenAiAndAnthropicShape) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);

  auto r = Post(Chat("m", "my card is 4111-1111-1111-1111"));
  EXPECT_EQ(r.status, 403) << r.body;
  auto err = json::parse(r.body).at("error");
  EXPECT_EQ(err.at("type").as_string(), "permission_error");
  EXPECT_NE(std::string(err.at("message").as_string()).find("policy 'pii-local-only'"),
            std::string::npos)
      << r.body;
  EXPECT_NE(DecisionHeader(r).find("outcome=rejected"), std::string::npos) << DecisionHeader(r);
  EXPECT_NE(DecisionHeader(r).find("policies=pii-local-only"), std::string::npos);

  auto a = Post(Messages("m", "reach me at alice@example.com"), {}, "/v1/messages");
  EXPECT_EQ(a.status, 403) << a.body;
  auto body = json::parse(a.body);
  EXPECT_EQ(body.at("type").as_string(), "error");
  EXPECT_EQ(body.at("error").at("type").as_string(), "permission_error");
  EXPECT_NE(std::string(body.at("error").at("message").as_string()).find("pii-local-only"),
            std::string::npos);
  EXPECT_NE(DecisionHeader(a).find("outcome=rejected"), std::string::npos);
  EXPECT_EQ(ext.requests(), 0);

  // Without PII the provider serves, on both fronts.
  EXPECT_EQ(Post(Chat("m", "hello")).status, 200);
  EXPECT_EQ(Post(Messages("m", "hello"), {}, "/v1/messages").status, 200);
  EXPECT_EQ(ext.requests(), 2);

  auto last_rejected = Decisions()[1].as_object();
  EXPECT_EQ(last_rejected.at("outcome").as_string(), "rejected");
  EXPECT_NE(std::string(last_rejected.at("message").as_string()).find("provider/ext"),
            std::string::npos);
  EXPECT_EQ(PolicyCount("pii-local-only", "rejected"), 2);
  EXPECT_EQ(Metric("kinference_requests_total{endpoint=\"none\",strategy=\"predicted-ttft\","
                   "outcome=\"rejected\"}"),
            2);
}

// Dry-run: recorded in the decision and counters, the route is unchanged.
TEST_F(PolicyProxyTest, DryRunIsRecordedButChangesNothing) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({Write("dry.yaml", PiiPolicy("pii-dry", "dry-run"))});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  auto r = Post(Chat("m", "mail bob@example.org"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Endpoint(r), "provider/ext");
  EXPECT_NE(DecisionHeader(r).find("policies=pii-dry"), std::string::npos);
  EXPECT_EQ(ext.requests(), 1);
  auto d = Decisions().back().as_object();
  EXPECT_TRUE(d.at("removed").as_array().empty());
  auto dry = d.at("dry_run").as_array();
  ASSERT_EQ(dry.size(), 1u);
  EXPECT_EQ(dry[0].at("policy").as_string(), "pii-dry");
  EXPECT_TRUE(dry[0].at("would_reject").as_bool());
  EXPECT_EQ(dry[0].at("would_remove").as_array()[0].at("endpoint").as_string(), "provider/ext");
  EXPECT_EQ(PolicyCount("pii-dry", "dry_run_would_reject"), 1);
  EXPECT_EQ(PolicyCount("pii-dry", "matched"), 1);
  EXPECT_EQ(PolicyCount("pii-dry", "rejected"), 0);
}

// Without policies every response still explains itself (generation 0, no policies).
TEST_F(PolicyProxyTest, NoPoliciesStillExplains) {
  FakeUpstream& local = Fake();
  GatewayConfig c = Base({});
  AddPool(c, "p", "m", local);
  Start(c);
  auto r = Post(Chat("m", "bob@example.org"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(DecisionHeader(r).rfind("generation=0; policies=-; endpoint=p/0", 0), 0u)
      << DecisionHeader(r);
  EXPECT_EQ(r.headers.Find("x-kinference-model"), "m");
  EXPECT_EQ(Generation(), 0);
  ASSERT_EQ(Decisions().size(), 1u);
}

// Hot reload by polling: a changed file bumps the generation and changes routing; an
// invalid file is rejected and the last valid set stays.
TEST_F(PolicyProxyTest, HotReloadBumpsGenerationAndKeepsLastValidSet) {
  FakeUpstream& local = Fake();
  FakeUpstream& ext = Fake();
  std::string path = Write("p.yaml", IncludePolicy("only-local", "{classes: [local]}"));
  GatewayConfig c = Base({path});
  AddPool(c, "local", "m", local);
  AddProvider(c, "ext", "m", ext);
  Start(c);
  auto r = Post(Chat("m", "hello"));
  EXPECT_EQ(Endpoint(r), "local/0");
  EXPECT_NE(DecisionHeader(r).find("generation=1; policies=only-local"), std::string::npos);
  EXPECT_EQ(Generation(), 1);

  Write("p.yaml", IncludePolicy("only-external", "{providers: [ext]}"));
  ASSERT_TRUE(WaitUntil([&] { return Generation() == 2; }));
  r = Post(Chat("m", "hello"));
  EXPECT_EQ(Endpoint(r), "provider/ext");
  EXPECT_NE(DecisionHeader(r).find("generation=2; policies=only-external"), std::string::npos);

  Write("p.yaml", IncludePolicy("broken", "{classes: [cloud]}"));  // unknown class
  ASSERT_TRUE(WaitUntil([&] { return Metric("\nkinference_policy_reload_failures_total") == 1; }));
  EXPECT_EQ(Generation(), 2);
  r = Post(Chat("m", "hello"));
  EXPECT_EQ(Endpoint(r), "provider/ext");
  EXPECT_NE(DecisionHeader(r).find("generation=2; policies=only-external"), std::string::npos);
}

// Reload on demand (SIGHUP calls Gateway::ReloadPolicies); an in-flight request keeps
// the snapshot it started with even when the set changes before it is routed.
TEST_F(PolicyProxyTest, ReloadNeverChangesAnInFlightDecision) {
  FakeUpstream& local = Fake();
  FakeUpstream& ext = Fake();
  classifier_ = std::make_unique<FakeClassifier>(io(), /*hold=*/true, "[]");
  OnStop([this] { classifier_->Stop(); });
  std::string path = Write("p.yaml", PiiPolicy("pii-v1"));
  GatewayConfig c = Base({path});
  c.policies.reload_interval_s = 0;  // no polling: only explicit reloads
  // 5 s: the test releases the held call long before.
  c.tagging.classifier =
      ClassifierConfig{classifier_->url(), "127.0.0.1", classifier_->port(), "/classify", 5, "clf"};
  AddPool(c, "local", "m", local);
  AddProvider(c, "ext", "m", ext);
  Start(c);

  // Held in the classifier: the snapshot (generation 1, pii-v1) is already taken.
  auto pending = std::async(std::launch::async, [&] { return Post(Chat("m", "a@example.org")); });
  ASSERT_TRUE(WaitUntil([&] { return classifier_->requests() == 1; }));
  Write("p.yaml", IncludePolicy("only-external", "{providers: [ext]}") + "# changed\n");
  Status reloaded;
  OnIo([&] { reloaded = gateway_->ReloadPolicies(); });
  ASSERT_TRUE(reloaded.ok()) << reloaded.message();
  EXPECT_EQ(Generation(), 2);
  OnIo([&] { classifier_->Release(); });
  auto r = pending.get();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Endpoint(r), "local/0");  // pii-v1 excluded the provider
  EXPECT_NE(DecisionHeader(r).find("generation=1; policies=pii-v1"), std::string::npos)
      << DecisionHeader(r);
  // Every key and string of the body as sent (policy/request_text.h), not the rendering.
  EXPECT_EQ(classifier_->last_body(),
            R"({"text":"model\nmessages\nm\nrole\ncontent\nuser\na@example.org"})");

  // The next request sees generation 2 (only the provider).
  auto next = std::async(std::launch::async, [&] { return Post(Chat("m", "a@example.org")); });
  // generation 2 has no tag conditions: no classifier call, routed at once.
  r = next.get();
  EXPECT_EQ(Endpoint(r), "provider/ext");
  EXPECT_NE(DecisionHeader(r).find("generation=2"), std::string::npos);
  EXPECT_EQ(classifier_->requests(), 1);

  // An invalid file on explicit reload: error returned, generation 2 kept.
  Write("p.yaml", "kind: Nope\n");
  OnIo([&] { reloaded = gateway_->ReloadPolicies(); });
  EXPECT_FALSE(reloaded.ok());
  EXPECT_EQ(Generation(), 2);
  EXPECT_EQ(Metric("\nkinference_policy_reload_failures_total"), 1);
}

TEST_F(ClassifierTest, TimeoutWithRejectIs503NamingPolicyAndTagger) {
  StartWithClassifier(/*hold=*/true, "[]", "reject");
  auto start = std::chrono::steady_clock::now();
  auto r = Post(Chat("m", "hello"));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, 503) << r.body;
  std::string msg(json::parse(r.body).at("error").at("message").as_string());
  EXPECT_NE(msg.find("policy 'pii-guard'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tagger 'pii-model' failed"), std::string::npos) << msg;
  EXPECT_NE(DecisionHeader(r).find("outcome=rejected"), std::string::npos);
  EXPECT_GE(took, 0.19);
  EXPECT_LT(took, 5.0);
  EXPECT_EQ(ext_->requests(), 0);
}

TEST_F(ClassifierTest, TimeoutWithIgnoreRoutes) {
  StartWithClassifier(/*hold=*/true, "[]", "ignore");
  auto r = Post(Chat("m", "hello"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Endpoint(r), "provider/ext");
  EXPECT_EQ(classifier_->requests(), 1);
}

TEST_F(ClassifierTest, ClassifierTagsApply) {
  StartWithClassifier(/*hold=*/false, R"(["PII", "bad tag!"])", "reject");
  auto r = Post(Chat("m", "nothing a pattern would catch"));
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(ext_->requests(), 0);
  EXPECT_EQ(classifier_->requests(), 1);
}

TEST_F(ClassifierTest, MalformedAnswerIsATaggerFailure) {
  StartWithClassifier(/*hold=*/false, R"("pii")", "reject");  // tags not an array
  auto r = Post(Chat("m", "hello"));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("tagger 'pii-model' failed"), std::string::npos) << r.body;
  EXPECT_EQ(ext_->requests(), 0);
}

// A retry never leaves the allowed set: the only local endpoint fails and the provider
// (excluded for PII) is not tried; the error still explains the decision.
TEST_F(PolicyProxyTest, RetriesStayWithinTheAllowedSet) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  c.scrape_interval_s = 60;
  c.pools.push_back(PoolConfig{
      "local",
      "m",
      {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(testing::DeadPort()), "t")}});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  auto r = Post(Chat("m", "call +44 20 7946 0958 or bob@example.org"));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(ext.requests(), 0);
  // The dead endpoint is either tried and fails, or already ejected by its refused scrape
  // (passive health): either way the answer is 503 and names the policy, never the provider.
  EXPECT_NE(DecisionHeader(r).find("policies=pii-local-only; endpoint="), std::string::npos)
      << DecisionHeader(r);
  EXPECT_EQ(DecisionHeader(r).find("endpoint=provider/"), std::string::npos) << DecisionHeader(r);
  // Without PII the retry may use the provider.
  auto ok = Post(Chat("m", "hello"));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ext.requests(), 1);
}

// Every local replica down, the provider healthy but excluded by the policy: the 503
// (529 on /v1/messages, Retry-After as for any unhealthy pool) names the policy that left
// no candidate and what it excluded; the provider is still never called.
TEST_F(PolicyProxyTest, AllLocalReplicasDownNamesThePolicyThatExcludedTheProvider) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  c.pools.push_back(PoolConfig{
      "local",
      "m",
      {ParseEndpointUrl("http://127.0.0.1:" + std::to_string(testing::DeadPort()), "t")}});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  const std::string pii = Chat("m", "my card is 4111 1111 1111 1111");
  // The dead replica is ejected by its failed scrape or by the first request's connect.
  ASSERT_TRUE(
      WaitUntil([&] { return Post(pii).body.find("No healthy endpoint") != std::string::npos; }));
  auto r = Post(pii);
  EXPECT_EQ(r.status, 503) << r.body;
  const std::string message(json::parse(r.body).at("error").at("message").as_string());
  EXPECT_NE(message.find("policy 'pii-local-only' excluded the healthy endpoint provider/ext "
                         "(excluded by class provider)"),
            std::string::npos)
      << message;
  auto a = Post(Messages("m", "my card is 4111 1111 1111 1111"), {}, "/v1/messages");
  EXPECT_EQ(a.status, 529) << a.body;
  EXPECT_NE(a.body.find("policy 'pii-local-only'"), std::string::npos) << a.body;
  EXPECT_EQ(ext.requests(), 0);
  // Without PII the provider serves.
  EXPECT_EQ(Post(Chat("m", "hello")).status, 200);
  EXPECT_EQ(ext.requests(), 1);
}

// x-kinference-tags is ignored unless tagging.trusted_tag_header is set.
TEST_F(PolicyProxyTest, TagHeaderIgnoredUnlessTrusted) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  AddProvider(c, "ext", "m", ext);
  Start(c);
  http::Headers h;
  h.Add("x-kinference-tags", "pii");
  EXPECT_EQ(Post(Chat("m", "hello"), h).status, 200);
  EXPECT_EQ(ext.requests(), 1);
}

TEST_F(PolicyProxyTest, TrustedTagHeaderApplies) {
  FakeUpstream& ext = Fake();
  GatewayConfig c = Base({kExamples + "pii-local-only.yaml"});
  c.tagging.trusted_tag_header = true;
  AddProvider(c, "ext", "m", ext);
  Start(c);
  http::Headers h;
  h.Add("x-kinference-tags", "pii");
  EXPECT_EQ(Post(Chat("m", "hello"), h).status, 403);
  EXPECT_EQ(Post(Chat("m", "hello")).status, 200);
  EXPECT_EQ(ext.requests(), 1);
}

TEST_F(PolicyProxyTest, InvalidPolicyFileIsAStartupErrorNamingTheFile) {
  std::string path = Write("bad.yaml", IncludePolicy("bad", "{classes: [cloud]}"));
  GatewayConfig c = Base({path});
  AddPool(c, "p", "m", Fake());
  try {
    Gateway g(io(), c);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("policies.files"), std::string::npos) << what;
    EXPECT_NE(what.find("bad.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("unknown class 'cloud'"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace kinference::gateway
