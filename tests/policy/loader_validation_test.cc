// LoadPolicySet / ParsePolicies refusals: empty files, tags outside the tagger alphabet,
// names that are not DNS-1123 subdomains.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "policy/policy.h"
#include "policy/store.h"
#include "policy_test_util.h"

namespace kinference::policy {
namespace {

using testing::PolicyDoc;
using testing::TempPolicyFile;

TEST(PolicyLoader, EmptyOrCommentOnlyFileIsAnError) {
  auto empty = TempPolicyFile("empty.yaml", "");
  auto comments = TempPolicyFile("comments.yaml", "# nothing yet\n---\n");
  auto good = TempPolicyFile("good.yaml", PolicyDoc("good"));
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

TEST(PolicyLoader, TagsOutsideTheTaggerAlphabetAreRejected) {
  auto r = ParsePolicies(PolicyDoc("t", "{match: {tags: {anyOf: [pii, PII], noneOf: ['a b']}}}"),
                         "t.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.yaml: spec.match.tags.anyOf[1]: invalid tag 'PII'"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("spec.match.tags.noneOf[0]: invalid tag 'a b'"),
            std::string::npos);
  EXPECT_TRUE(
      ParsePolicies(PolicyDoc("t", "{match: {tags: {anyOf: [pii:email, a.b_c-1]}}}"), "t").ok());
}

std::string Label63() { return std::string(63, 'a'); }

TEST(PolicyLoader, NameMustBeDns1123Subdomain) {
  for (std::string bad : std::vector<std::string>{
           "\"a\\\"b\"", "\"a\\r\\nb\"", "Upper", "-a", "a-", "a_b", "\"a,b\"",
           std::string(254, 'a'), "a..b", "a.-b", "a-.b", ".a", std::string(64, 'a') + ".b"}) {
    auto r = ParsePolicies(PolicyDoc(bad), "n.yaml");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("n.yaml: metadata.name: invalid name"), std::string::npos)
        << r.status().message();
  }
  for (std::string good :
       std::vector<std::string>{"a", "pii-local-only", "a.b-c.9",
                                Label63() + "." + Label63() + "." + Label63() + "." +
                                    std::string(61, 'b')}) {  // 253 characters
    EXPECT_TRUE(ParsePolicies(PolicyDoc(good), "n.yaml").ok()) << good;
  }
}

}  // namespace
}  // namespace kinference::policy
