// The three published examples in examples/policies/, loaded from disk and evaluated.
#include <gtest/gtest.h>

#include "policy/evaluate.h"
#include "policy/taggers.h"
#include "policy_test_util.h"

namespace kinference::policy {
namespace {

using testing::Endpoints;
using testing::Local;
using testing::Provider;
using V = std::vector<std::string>;

PolicySet LoadExamples(std::vector<std::string> names) {
  std::vector<std::string> paths;
  for (const auto& n : names)
    paths.push_back(std::string(KINFERENCE_SOURCE_DIR) + "/examples/policies/" + n);
  auto set = LoadPolicySet(paths, 1);
  EXPECT_TRUE(set.ok()) << set.status().message();
  return set.ok() ? *set : PolicySet{};
}

RequestInfo Tagged(std::string model, std::string_view text, bool tools = false) {
  TaggerConfig cfg;
  TaggerInput in{.text = text, .tools_present = tools};
  RequestInfo req{.model = std::move(model),
                  .tags = RunTaggers(cfg, in),
                  .prompt_tokens = EstimateTokens(text),
                  .tools_present = tools};
  return req;
}

TEST(PolicyExamples, AllThreeValidateTogether) {
  auto set = LoadExamples(
      {"simple-cheaper-model.yaml", "local-queue-before-providers.yaml", "pii-local-only.yaml"});
  ASSERT_EQ(set.policies.size(), 3u);
  EXPECT_EQ(set.policies[0].name, "pii-local-only");  // priority 100
  EXPECT_EQ(set.policies[1].name, "local-first-spillover");
  EXPECT_EQ(set.policies[2].name, "simple-to-small-model");
}

TEST(PolicyExamples, SimpleRequestComparesCheaperModelByPredictedTtft) {
  auto set = LoadExamples({"simple-cheaper-model.yaml"});
  auto req = Tagged("llama-3.1-70b", "What is the capital of France?");
  ASSERT_EQ(req.tags, V{"simple"});
  std::vector<Candidate> c{Local("big/0", "llama-3.1-70b", "big", 0, 0.8),
                           Local("small/0", "llama-3.1-8b", "small", 0, 1.1)};
  auto ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->matched, V{"simple-to-small-model"});
  EXPECT_EQ(ev->chosen_model, "llama-3.1-8b");  // 0.3 s slower, within 0.5 s tolerance

  c[1].predicted_ttft_s = 1.5;  // 0.7 s slower: not worth it
  ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->chosen_model, "llama-3.1-70b");

  // A long prompt is not "simple": the policy does not match.
  auto long_req = Tagged("llama-3.1-70b", std::string(4000, 'x'));
  c[1].predicted_ttft_s = 0.1;
  ev = Evaluate(set, long_req, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->matched.empty());
  EXPECT_EQ(ev->chosen_model, "llama-3.1-70b");
  EXPECT_EQ(Endpoints(ev->remaining), V{"big/0"});
}

TEST(PolicyExamples, LocalEndpointsOverQueueThresholdBeforeProviders) {
  auto set = LoadExamples({"local-queue-before-providers.yaml"});
  auto req = Tagged("m", "Summarise this report for me: " + std::string(2000, 'y'));
  std::vector<Candidate> c{Local("a/0", "m", "a", 3, 0.9), Local("a/1", "m", "a", 20, 2.0),
                           Provider("openai/m", "m", "openai", 0.5)};
  auto ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(Endpoints(ev->remaining), V{"a/0"});  // the provider waits while a local is fine

  c[0].queue_depth = 9;  // both locals over the threshold: spill to the provider
  ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(Endpoints(ev->remaining), V{"openai/m"});
  EXPECT_EQ(ev->removed[0].reason, "queue depth 9 > maxQueueDepth 8");
}

TEST(PolicyExamples, PiiExcludesProvidersAndRejectsWhenNoneRemain) {
  auto set = LoadExamples({"pii-local-only.yaml", "local-queue-before-providers.yaml"});
  auto pii = Tagged("m", "My card is 4111 1111 1111 1111, can you check my bill?");
  EXPECT_EQ(pii.tags, (V{"pii", "pii:payment_card", "simple"}));
  std::vector<Candidate> c{Local("a/0", "m", "a", 20, 2.0),
                           Provider("openai/m", "m", "openai", 0.5)};

  // Non-PII: the overloaded local goes, the provider serves.
  auto ev = Evaluate(set, Tagged("m", "Tell me a joke"), c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(Endpoints(ev->remaining), V{"openai/m"});

  // PII: providers excluded first, then the only local is over its queue threshold.
  ev = Evaluate(set, pii, c);
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(ev.status().message().find("policy 'local-first-spillover'"), std::string::npos)
      << ev.status().message();

  // PII alone with only providers: rejected naming pii-local-only.
  auto only_pii = LoadExamples({"pii-local-only.yaml"});
  ev = Evaluate(only_pii, pii, std::vector<Candidate>{c[1]});
  ASSERT_FALSE(ev.ok());
  EXPECT_NE(ev.status().message().find("request rejected by policy 'pii-local-only'"),
            std::string::npos);

  // PII with a healthy local: served locally.
  c[0].queue_depth = 0;
  ev = Evaluate(set, pii, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(Endpoints(ev->remaining), V{"a/0"});
  EXPECT_EQ(ev->matched, (V{"pii-local-only", "local-first-spillover"}));

  // A failed tagger: fail closed.
  auto failed = pii;
  failed.failed_taggers = {"classifier"};
  ev = Evaluate(set, failed, c);
  ASSERT_FALSE(ev.ok());
  EXPECT_NE(ev.status().message().find("pii-local-only"), std::string::npos);
}

// Shipped fail-closed: an image (or file, audio) no tagger can read is judged as carrying
// the pii tag, so it never reaches a provider.
TEST(PolicyExamples, PiiLocalOnlyKeepsUnscannableContentLocal) {
  auto set = LoadExamples({"pii-local-only.yaml"});
  ASSERT_EQ(set.policies.size(), 1u);
  EXPECT_EQ(set.policies[0].on_unscannable_content, OnUnscannableContent::kTreatAsTagged);
  RequestInfo image = Tagged("m", "What does this document say?");
  image.unscannable = {"image"};
  std::vector<Candidate> c{Local("a/0", "m", "a", 0, 2.0),
                           Provider("openai/m", "m", "openai", 0.5)};
  auto ev = Evaluate(set, image, c);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(Endpoints(ev->remaining), V{"a/0"});
  ev = Evaluate(set, image, std::vector<Candidate>{c[1]});
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), ErrorCode::kPermissionDenied);
}

}  // namespace
}  // namespace kinference::policy
