#include "policy/evaluate.h"

#include <gtest/gtest.h>

#include "policy_test_util.h"

namespace kinference::policy {
namespace {

using testing::Endpoints;
using testing::Local;
using testing::Provider;
using testing::SetOf;
using V = std::vector<std::string>;

std::vector<Candidate> Mixed() {
  return {Local("a/0", "m", "a", 2, 0.4), Local("a/1", "m", "a", 12, 1.5),
          Local("b/0", "m", "b", 0, 0.3, /*age=*/30), Provider("openai/m", "m", "openai", 0.8)};
}

TEST(PolicyEvaluate, NoPolicyMeansNoConstraints) {
  RequestInfo req{.model = "m"};
  auto cands = Mixed();
  cands.push_back(Local("x/0", "other", "x", 0, 0.1));  // another model: not considered
  auto ev = Evaluate(PolicySet{}, req, cands);
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->matched.empty());
  EXPECT_EQ(Endpoints(ev->remaining), (V{"a/0", "a/1", "b/0", "openai/m"}));
  EXPECT_EQ(ev->chosen_model, "m");
}

TEST(PolicyEvaluate, MatchConditions) {
  Policy p{.name = "p"};
  p.match.tenants = {"acme"};
  p.match.models = {"m"};
  p.match.tags.any_of = {"x", "y"};
  p.match.tags.all_of = {"z"};
  p.match.tags.none_of = {"n"};
  p.match.features.min_prompt_tokens = 10;
  p.match.features.max_prompt_tokens = 20;
  p.match.features.tools_present = true;
  p.match.features.stream = false;
  RequestInfo ok{.tenant = "acme",
                 .model = "m",
                 .tags = {"y", "z"},
                 .prompt_tokens = 15,
                 .tools_present = true};
  EXPECT_TRUE(Matches(p, ok));
  auto r = ok;
  r.tenant = "other";
  EXPECT_FALSE(Matches(p, r));
  r = ok;
  r.model = "m2";
  EXPECT_FALSE(Matches(p, r));
  r = ok;
  r.tags = {"z"};
  EXPECT_FALSE(Matches(p, r));  // anyOf fails
  r = ok;
  r.tags = {"x"};
  EXPECT_FALSE(Matches(p, r));  // allOf fails
  r = ok;
  r.tags.push_back("n");
  EXPECT_FALSE(Matches(p, r));  // noneOf fails
  r = ok;
  r.prompt_tokens = 21;
  EXPECT_FALSE(Matches(p, r));
  r = ok;
  r.prompt_tokens = 9;
  EXPECT_FALSE(Matches(p, r));
  r = ok;
  r.tools_present = false;
  EXPECT_FALSE(Matches(p, r));
  r = ok;
  r.stream = true;
  EXPECT_FALSE(Matches(p, r));
}

TEST(PolicyEvaluate, IncludeExcludeAndWhenRemoveWithReasons) {
  Policy p{.name = "state", .priority = 1};
  p.constraints.when.max_queue_depth = 8;
  p.constraints.when.max_metrics_age_s = 10;
  Policy q{.name = "no-openai"};
  q.constraints.exclude.providers = {"openai"};
  auto ev = Evaluate(SetOf({q, p}), RequestInfo{.model = "m"}, Mixed());
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_EQ(ev->generation, 3u);
  EXPECT_EQ(ev->matched, (V{"state", "no-openai"}));
  EXPECT_EQ(Endpoints(ev->remaining), (V{"a/0"}));
  ASSERT_EQ(ev->removed.size(), 3u);
  EXPECT_EQ(ev->removed[0].endpoint, "a/1");
  EXPECT_EQ(ev->removed[0].policy, "state");
  EXPECT_EQ(ev->removed[0].reason, "queue depth 12 > maxQueueDepth 8");
  EXPECT_EQ(ev->removed[1].endpoint, "b/0");
  EXPECT_EQ(ev->removed[1].reason, "metrics age 30.0s > maxMetricsAgeSeconds 10");
  EXPECT_EQ(ev->removed[2].endpoint, "openai/m");
  EXPECT_EQ(ev->removed[2].policy, "no-openai");
  EXPECT_EQ(ev->removed[2].reason, "excluded by provider openai");

  Policy inc{.name = "only-b"};
  inc.constraints.include = Selector{.pools = {"b"}};
  ev = Evaluate(SetOf({inc}), RequestInfo{.model = "m"}, Mixed());
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(Endpoints(ev->remaining), (V{"b/0"}));
}

TEST(PolicyEvaluate, KvUsagePredictedTtftAndNeverScraped) {
  Policy p{.name = "p"};
  p.constraints.when.max_kv_cache_usage = 0.8;
  p.constraints.when.max_predicted_ttft_s = 1.0;
  p.constraints.when.max_metrics_age_s = 5;
  std::vector<Candidate> c{Local("full", "m", "a", 0, 0.2, 1, 0.95),
                           Local("slow", "m", "a", 0, 2.0), Local("new", "m", "a", 0, 0.1, -1),
                           Local("ok", "m", "a", 0, 0.5), Provider("prov", "m", "x", 0.7)};
  auto ev = Evaluate(SetOf({p}), RequestInfo{.model = "m"}, c);
  ASSERT_TRUE(ev.ok());
  // Providers expose no KV usage or metrics age: those predicates do not remove them.
  EXPECT_EQ(Endpoints(ev->remaining), (V{"ok", "prov"}));
  EXPECT_EQ(ev->removed[0].reason, "KV cache usage 0.95 > maxKvCacheUsage 0.8");
  EXPECT_EQ(ev->removed[1].reason, "predicted TTFT 2.000s > maxPredictedTtftSeconds 1");
  EXPECT_EQ(ev->removed[2].reason, "never scraped (maxMetricsAgeSeconds)");
}

TEST(PolicyEvaluate, RejectsNamingThePolicyThatRemovedTheLastCandidate) {
  Policy first{.name = "queue", .priority = 10};
  first.constraints.when.max_queue_depth = 1;
  Policy second{.name = "no-providers", .priority = 5};
  second.constraints.exclude.classes = {EndpointClass::kProvider};
  auto ev = Evaluate(
      SetOf({first, second}), RequestInfo{.model = "m"},
      std::vector<Candidate>{Local("a/0", "m", "a", 4, 0.1), Provider("p", "m", "openai", 0.5)});
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(ev.status().message().find("policy 'no-providers'"), std::string::npos)
      << ev.status().message();
  EXPECT_NE(ev.status().message().find("p: excluded by class provider"), std::string::npos);
}

TEST(PolicyEvaluate, NoCandidatesAtAllIsNotAPolicyRejection) {
  Policy p{.name = "p"};
  p.constraints.exclude.classes = {EndpointClass::kLocal};
  auto ev = Evaluate(SetOf({p}), RequestInfo{.model = "m"}, std::vector<Candidate>{});
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->remaining.empty());
}

TEST(PolicyEvaluate, DryRunReportsButDoesNotApply) {
  Policy p{.name = "would-block", .mode = Mode::kDryRun};
  p.constraints.exclude.classes = {EndpointClass::kLocal, EndpointClass::kProvider};
  p.alternatives = {{"small", 0}};
  auto ev = Evaluate(SetOf({p}), RequestInfo{.model = "m"}, Mixed());
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->matched, (V{"would-block"}));
  EXPECT_EQ(ev->remaining.size(), 4u);
  EXPECT_TRUE(ev->removed.empty());
  EXPECT_TRUE(ev->alternatives.empty());
  ASSERT_EQ(ev->dry_run.size(), 1u);
  EXPECT_EQ(ev->dry_run[0].would_remove.size(), 4u);
  EXPECT_EQ(ev->dry_run[0].would_add_alternatives.size(), 1u);
  EXPECT_FALSE(ev->dry_run[0].would_reject);  // the alternative could still serve it

  p.alternatives.clear();
  ev = Evaluate(SetOf({p}), RequestInfo{.model = "m"}, Mixed());
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->dry_run[0].would_reject);
}

TEST(PolicyEvaluate, AlternativeRule) {
  Policy p{.name = "alt"};
  p.alternatives = {{"small", 0.5}, {"fast", 0}};
  auto run = [&](double m_ttft, double small_ttft, double fast_ttft) {
    std::vector<Candidate> c{Local("m/0", "m", "pm", 0, m_ttft),
                             Local("s/0", "small", "ps", 0, small_ttft),
                             Local("f/0", "fast", "pf", 0, fast_ttft)};
    auto ev = Evaluate(SetOf({p}), RequestInfo{.model = "m"}, c);
    EXPECT_TRUE(ev.ok());
    return ev->chosen_model;
  };
  EXPECT_EQ(run(1.0, 1.4, 2.0), "small");  // cheaper, within 0.5 s tolerance
  EXPECT_EQ(run(1.0, 1.6, 2.0), "m");      // cheaper but too slow
  EXPECT_EQ(run(1.0, 1.6, 0.9), "fast");   // strictly faster, no tolerance
  EXPECT_EQ(run(1.0, 1.6, 1.0), "m");      // tie without tolerance: requested stays
  EXPECT_EQ(run(1.0, 0.5, 0.9), "small");  // lowest predicted TTFT among winners

  std::vector<Candidate> c{Local("m/0", "m", "pm", 0, 1.0), Local("s/0", "small", "ps", 0, 1.2)};
  auto ev = Evaluate(SetOf({p}), RequestInfo{.model = "m"}, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(Endpoints(ev->ForChosenModel()), (V{"s/0"}));
  ASSERT_EQ(ev->alternatives.size(), 2u);
}

TEST(PolicyEvaluate, TaggerFailure) {
  Policy strict{.name = "strict"};
  strict.match.tags.any_of = {"pii"};
  strict.constraints.exclude.classes = {EndpointClass::kProvider};
  RequestInfo req{.model = "m", .failed_taggers = {"classifier"}};
  auto ev = Evaluate(SetOf({strict}), req, Mixed());
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(ev.status().message().find("'strict'"), std::string::npos);
  EXPECT_NE(ev.status().message().find("'classifier'"), std::string::npos);

  strict.on_tagger_failure = OnTaggerFailure::kIgnore;
  ev = Evaluate(SetOf({strict}), req, Mixed());
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->matched.empty());  // judged on the tags produced: none
  EXPECT_EQ(ev->remaining.size(), 4u);

  // Policies without tag conditions do not care about tagger failures.
  Policy plain{.name = "plain"};
  ev = Evaluate(SetOf({plain}), req, Mixed());
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->matched, (V{"plain"}));
}

}  // namespace
}  // namespace kinference::policy
