#include "k8s/cache.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace kinference::k8s {
namespace {

ObjectPtr Obj(const std::string& ns, const std::string& name, const std::string& rv) {
  return std::make_shared<const boost::json::object>(boost::json::object{
      {"metadata",
       boost::json::object{{"namespace", ns}, {"name", name}, {"resourceVersion", rv}}}});
}

TEST(ObjectCacheTest, UpsertReportsAddedThenModifiedAndIgnoresTheSameResourceVersion) {
  ObjectCache cache;
  auto a = cache.Upsert(Obj("ns", "a", "1"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->type, ChangeType::kAdded);
  EXPECT_EQ(a->key, "ns/a");
  EXPECT_FALSE(cache.Upsert(Obj("ns", "a", "1")));
  auto m = cache.Upsert(Obj("ns", "a", "2"));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, ChangeType::kModified);
  EXPECT_EQ(ResourceVersionOf(*m->old), "1");
  EXPECT_EQ(ResourceVersionOf(*m->object), "2");
  EXPECT_EQ(ResourceVersionOf(*cache.Get("ns/a")), "2");
}

TEST(ObjectCacheTest, RemoveReportsTheDeletionEventsObject) {
  ObjectCache cache;
  cache.Upsert(Obj("ns", "a", "1"));
  EXPECT_FALSE(cache.Remove("ns/b"));
  auto d = cache.Remove("ns/a", Obj("ns", "a", "5"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->type, ChangeType::kDeleted);
  EXPECT_EQ(ResourceVersionOf(*d->object), "5");
  EXPECT_EQ(cache.size(), 0u);
}

TEST(ObjectCacheTest, ReplaceReportsWhatARelistChangedIncludingDeletionsMissedMeanwhile) {
  ObjectCache cache;
  cache.Upsert(Obj("ns", "a", "1"));
  cache.Upsert(Obj("ns", "b", "1"));
  cache.Upsert(Obj("ns", "c", "1"));
  auto changes = cache.Replace({Obj("ns", "b", "1"), Obj("ns", "c", "7"), Obj("ns", "d", "8")});
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].type, ChangeType::kDeleted);
  EXPECT_EQ(changes[0].key, "ns/a");
  EXPECT_EQ(changes[1].type, ChangeType::kModified);
  EXPECT_EQ(changes[1].key, "ns/c");
  EXPECT_EQ(changes[2].type, ChangeType::kAdded);
  EXPECT_EQ(changes[2].key, "ns/d");
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.Get("ns/a"));
}

TEST(ObjectCacheTest, ClusterScopedObjectsAreKeyedByNameAlone) {
  ObjectCache cache;
  auto a = cache.Upsert(Obj("", "node-1", "1"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->key, "node-1");
}

}  // namespace
}  // namespace kinference::k8s
