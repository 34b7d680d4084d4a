// Review fixes in the policy library: what taggers scan (every string of the body), empty
// policy files, tag and name alphabets, reference checks, the store's validator, and the
// per-request counters and dry-run alternatives in decision records.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "policy/decision_log.h"
#include "policy/references.h"
#include "policy/request_text.h"
#include "policy/store.h"
#include "policy/taggers.h"
#include "policy_test_util.h"

namespace kinference::policy {
namespace {

using testing::Local;
using testing::Provider;
using testing::SetOf;

std::string Doc(const std::string& name, const std::string& spec = "{}") {
  return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: " + name +
         "}\nspec: " + spec + "\n";
}

std::string TempFile(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() /
           ("policy_review_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

bool HasPii(std::string_view body) { return !PiiTags(RequestScanText(body)).empty(); }

TEST(RequestScanText, KeysStringsAndIntegralNumbers) {
  EXPECT_EQ(
      RequestScanText(std::string_view(
          R"({"model":"m","bob@example.org":1,"a":[{"b":"x"},"y",true,null,1.5,2e3],"n":42})")),
      "model\nbob@example.org\na\nn\nm\n1\nb\nx\ny\n2000\n42");
  // The object overload (no copy of the body) gives the same text.
  auto v = boost::json::parse(R"({"k":{"v":"w"},"n":-7.0})");
  EXPECT_EQ(RequestScanText(v.as_object()), RequestScanText(v));
  EXPECT_EQ(RequestScanText(v), "k\nn\nv\nw\n-7");
  // Not JSON: scanned as sent.
  EXPECT_EQ(RequestScanText(std::string_view("not json")), "not json");
}

// Each field the review listed, alone, carries PII that the routing rendering misses.
TEST(RequestScanText, PiiInEveryFieldOfChatCompletionsAndMessages) {
  const char* kBodies[] = {
      // chat: tool_calls arguments, tool description, prediction, response_format, user,
      // name, refusal.
      R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{\"to\":\"bob@example.org\"}"}}]}]})",
      R"({"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","description":"mail alice@example.com"}}]})",
      R"({"model":"m","messages":[],"prediction":{"type":"content","content":"card 4111 1111 1111 1111"}})",
      R"({"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"description":"SSN 123-45-6789"}}}})",
      R"({"model":"m","messages":[],"user":"carol@example.net"})",
      R"({"model":"m","messages":[{"role":"user","name":"dave@example.org","content":"hi"}]})",
      R"({"model":"m","messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"no, eve@example.org"}]}]})",
      // completions: later prompt elements, suffix.
      R"({"model":"m","prompt":["hello","frank@example.org"]})",
      R"({"model":"m","prompt":"hello","suffix":"gina@example.org"})",
      // Anthropic: tool_use input, document, search_result, tool description, metadata.
      R"({"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"email":"h@example.org"}}]}]})",
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"write to kim@example.org"}}]}]})",
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"ivan@example.org"}]}]}]})",
      R"({"model":"m","messages":[],"tools":[{"name":"f","description":"call +44 20 7946 0958","input_schema":{}}]})",
      R"({"model":"m","messages":[],"metadata":{"user_id":"judy@example.org"}})",
      // A card number sent as a JSON number.
      R"({"model":"m","messages":[],"metadata":{"account":4111111111111111}})",
      // ... or as a float; and PII in object keys (a tool schema property, logit_bias).
      R"({"model":"m","messages":[],"temperature":4.111111111111111e15})",
      R"({"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"bob@example.com":{}}}}}]})",
      R"({"model":"m","messages":[],"logit_bias":{"4111111111111111":1}})",
      // An inline base64 text document ("bob@example.com SSN 123-45-6789").
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"text/plain","data":"Ym9iQGV4YW1wbGUuY29tIFNTTiAxMjMtNDUtNjc4OQ=="}}]}]})",
  };
  for (const char* body : kBodies) EXPECT_TRUE(HasPii(body)) << body;
  EXPECT_FALSE(HasPii(R"({"model":"m","messages":[{"role":"user","content":"hello"}]})"));
}

TEST(PolicyLoaderReview, EmptyOrCommentOnlyFileIsAnError) {
  auto empty = TempFile("empty.yaml", "");
  auto comments = TempFile("comments.yaml", "# nothing yet\n---\n");
  auto good = TempFile("good.yaml", Doc("good"));
  for (const auto& path : {empty, comments}) {
    std::vector<std::string> paths{good, path};
    auto r = LoadPolicySet(paths);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.status().message(), path + ": no InferencePolicy documents");
  }
  // Hot reload: a half-written (empty) file keeps the last valid set.
  PolicyStore store({good});
  ASSERT_TRUE(store.Reload().ok());
  auto before = store.Current();
  std::ofstream(good) << "";
  EXPECT_FALSE(store.Reload().ok());
  EXPECT_EQ(store.Current(), before);
  for (const auto& p : {empty, comments, good}) std::filesystem::remove(p);
}

TEST(PolicyLoaderReview, TagsOutsideTheTaggerAlphabetAreRejected) {
  auto r =
      ParsePolicies(Doc("t", "{match: {tags: {anyOf: [pii, PII], noneOf: ['a b']}}}"), "t.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.yaml: spec.match.tags.anyOf[1]: invalid tag 'PII'"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("spec.match.tags.noneOf[0]: invalid tag 'a b'"),
            std::string::npos);
  EXPECT_TRUE(ParsePolicies(Doc("t", "{match: {tags: {anyOf: [pii:email, a.b_c-1]}}}"), "t").ok());
}

std::string Label63() { return std::string(63, 'a'); }

TEST(PolicyLoaderReview, NameMustBeDns1123Subdomain) {
  for (std::string bad : std::vector<std::string>{
           "\"a\\\"b\"", "\"a\\r\\nb\"", "Upper", "-a", "a-", "a_b", "\"a,b\"",
           std::string(254, 'a'), "a..b", "a.-b", "a-.b", ".a", std::string(64, 'a') + ".b"}) {
    auto r = ParsePolicies(Doc(bad), "n.yaml");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("n.yaml: metadata.name: invalid name"), std::string::npos)
        << r.status().message();
  }
  for (std::string good :
       std::vector<std::string>{"a", "pii-local-only", "a.b-c.9",
                                Label63() + "." + Label63() + "." + Label63() + "." +
                                    std::string(61, 'b')}) {  // 253 characters
    EXPECT_TRUE(ParsePolicies(Doc(good), "n.yaml").ok()) << good;
  }
}

TEST(PolicyReferences, UnknownPoolsProvidersAlternativesAreErrorsModelsWarnings) {
  auto parsed =
      ParsePolicies(Doc("r",
                        "{match: {models: [future]}, constraints: {include: {pools: [a, nope]}, "
                        "exclude: {providers: [gone]}, prefer: {pools: [a]}}, "
                        "alternatives: [{model: small}, {model: missing}]}"),
                    "r.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  PolicySet set = SetOf(*parsed);
  KnownNames known{{"a"}, {"openai"}, {"m", "small"}};
  ReferenceReport r = CheckReferences(set, known);
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0],
            "r.yaml: policy r: spec.constraints.include.pools[1]: unknown pool 'nope' (gateway "
            "has: a)");
  EXPECT_EQ(r.errors[1],
            "r.yaml: policy r: spec.constraints.exclude.providers[0]: unknown provider 'gone' "
            "(gateway has: openai)");
  EXPECT_NE(r.errors[2].find("spec.alternatives[1].model: no endpoint serves model 'missing'"),
            std::string::npos);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("spec.match.models[0]: no endpoint serves model 'future'"),
            std::string::npos);
  known.pools.insert("nope");
  known.providers.insert("gone");
  known.models.insert("missing");
  EXPECT_TRUE(CheckReferences(set, known).errors.empty());
}

TEST(PolicyStoreReview, ValidatorErrorRejectsTheSetAndKeepsTheLastValid) {
  auto path = TempFile("v.yaml", Doc("v1"));
  bool reject = false;
  PolicyStore store({path}, [&](const PolicySet&) {
    return reject ? Status(ErrorCode::kInvalidArgument, "bad reference") : Status::Ok();
  });
  ASSERT_TRUE(store.Reload().ok());
  auto first = store.Current();
  reject = true;
  std::ofstream(path) << Doc("v2");
  Status s = store.Reload();
  EXPECT_EQ(s.message(), "bad reference");
  EXPECT_EQ(store.Current(), first);
  EXPECT_EQ(store.Current()->policies[0].name, "v1");
  std::filesystem::remove(path);
}

TEST(PolicyCountersReview, RemovedOncePerRequestRejectedAlsoMatched) {
  Policy p{.name = "locals-only"};
  p.constraints.exclude.classes = {EndpointClass::kProvider};
  Policy other{.name = "other"};  // matches every request, removes nothing
  auto set = SetOf({p, other});
  RequestInfo req{.model = "m"};
  std::vector<Candidate> c{Local("a/0", "m", "a", 0, 0.4), Provider("x/m", "m", "x", 0.2),
                           Provider("y/m", "m", "y", 0.2)};
  auto ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->removed.size(), 2u);  // two endpoints removed by one policy
  PolicyCounters counters;
  counters.Record(RoutedRecord(*ev, req, 1, "r1", "a/0", 0.4));
  auto only_providers = std::vector<Candidate>{c[1], c[2]};
  auto rejected = Evaluate(set, req, only_providers);
  ASSERT_FALSE(rejected.ok());
  auto rec = RejectedRecord(rejected.status(), req, 3, 2, "r2", MatchingPolicies(set, req));
  EXPECT_EQ(rec.rejected_by, "locals-only");
  counters.Record(rec);
  auto counts = counters.Snapshot();
  EXPECT_EQ((counts[{"locals-only", "removed"}]), 1u);
  EXPECT_EQ((counts[{"locals-only", "matched"}]), 2u);
  EXPECT_EQ((counts[{"other", "matched"}]), 2u);
  EXPECT_EQ((counts[{"locals-only", "rejected"}]), 1u);
  EXPECT_EQ((counts[{"other", "rejected"}]), 0u);
}

TEST(DecisionLogReview, DryRunRecordsWouldAddAlternativesAndFilter) {
  Policy p{.name = "try-small", .mode = Mode::kDryRun};
  p.alternatives = {{"small", 0.5}};
  auto set = SetOf({p});
  RequestInfo req{.tenant = "acme", .model = "m"};
  std::vector<Candidate> c{Local("a/0", "m", "a", 0, 0.4)};
  auto ev = Evaluate(set, req, c);
  ASSERT_TRUE(ev.ok());
  DecisionLog log;
  log.Add(RoutedRecord(*ev, req, 1, "r1", "a/0", 0.4));
  req.tenant = "other";
  log.Add(RoutedRecord(*ev, req, 2, "r2", "a/0", 0.4));
  auto all = boost::json::parse(log.ToJson()).at("decisions").as_array();
  ASSERT_EQ(all.size(), 2u);
  auto adds = all[0].at("dry_run").as_array()[0].at("would_add_alternatives").as_array();
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].at("model").as_string(), "small");
  EXPECT_DOUBLE_EQ(adds[0].at("tolerance_s").as_double(), 0.5);
  auto acme =
      boost::json::parse(log.ToJson([](const DecisionRecord& r) { return r.tenant == "acme"; }))
          .at("decisions")
          .as_array();
  ASSERT_EQ(acme.size(), 1u);
  EXPECT_EQ(acme[0].at("request_id").as_string(), "r1");
}

}  // namespace
}  // namespace kinference::policy
