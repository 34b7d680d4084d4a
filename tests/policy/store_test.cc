#include "policy/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "policy_test_util.h"

namespace kinference::policy {
namespace {

std::string Doc(const std::string& name, int priority) {
  return "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: " + name +
         "}\nspec: {priority: " + std::to_string(priority) + "}\n";
}

class PolicyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("policy_store_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& file, const std::string& text) {
    auto p = (dir_ / file).string();
    std::ofstream(p) << text;
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(PolicyStoreTest, ReloadSwapsAndKeepsLastValidSet) {
  auto a = Write("a.yaml", Doc("a", 1));
  auto b = Write("b.yaml", Doc("b", 2) + "---\n" + Doc("c", 2));
  PolicyStore store({a, b});
  EXPECT_EQ(store.Current()->generation, 0u);
  EXPECT_TRUE(store.Current()->policies.empty());
  ASSERT_TRUE(store.Reload().ok());
  auto first = store.Current();
  EXPECT_EQ(first->generation, 1u);
  ASSERT_EQ(first->policies.size(), 3u);
  EXPECT_EQ(first->policies[0].name, "b");
  EXPECT_EQ(first->policies[2].name, "a");

  // Unchanged files: no reload, same generation.
  ASSERT_TRUE(store.ReloadIfChanged().ok());
  EXPECT_EQ(store.Current()->generation, 1u);

  // An invalid new version is rejected; the last valid set stays.
  Write("a.yaml",
        "apiVersion: kinference.io/v1alpha1\nkind: InferencePolicy\nmetadata: {name: a}\n"
        "spec:\n  bogus: 1\n");
  Status s = store.ReloadIfChanged();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("a.yaml: spec.bogus: unknown field"), std::string::npos)
      << s.message();
  EXPECT_EQ(store.Current(), first);

  // A duplicate name across files is invalid too.
  Write("a.yaml", Doc("c", 1));
  s = store.ReloadIfChanged();
  EXPECT_NE(s.message().find("duplicate policy name 'c'"), std::string::npos) << s.message();
  EXPECT_EQ(store.Current(), first);

  // A valid change is picked up with the next generation; old snapshots stay intact.
  Write("a.yaml", Doc("a", 10) + "# changed\n");
  ASSERT_TRUE(store.ReloadIfChanged().ok());
  EXPECT_EQ(store.Current()->generation, 2u);
  EXPECT_EQ(store.Current()->policies[0].name, "a");
  EXPECT_EQ(first->policies[0].name, "b");
}

TEST(PolicyStore, ValidatorErrorRejectsTheSetAndKeepsTheLastValid) {
  auto path = testing::TempPolicyFile("v.yaml", testing::PolicyDoc("v1"));
  bool reject = false;
  PolicyStore store({path}, [&](const PolicySet&) {
    return reject ? Status(ErrorCode::kInvalidArgument, "bad reference") : Status::Ok();
  });
  ASSERT_TRUE(store.Reload().ok());
  auto first = store.Current();
  reject = true;
  std::ofstream(path) << testing::PolicyDoc("v2");
  Status s = store.Reload();
  EXPECT_EQ(s.message(), "bad reference");
  EXPECT_EQ(store.Current(), first);
  EXPECT_EQ(store.Current()->policies[0].name, "v1");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kinference::policy
