#include "k8s/list_watch.h"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

namespace kinference::k8s {
namespace {

namespace json = boost::json;

json::object Pod(const std::string& name, const std::string& rv) {
  return json::object{
      {"metadata", json::object{{"namespace", "ns"}, {"name", name}, {"resourceVersion", rv}}}};
}

std::string Page(std::vector<json::object> items, const std::string& rv,
                 const std::string& cont = "") {
  json::array a;
  for (auto& i : items) a.push_back(std::move(i));
  json::object md{{"resourceVersion", rv}};
  if (!cont.empty()) md["continue"] = cont;
  return json::serialize(json::object{{"kind", "PodList"}, {"metadata", md}, {"items", a}});
}

std::string Event(const std::string& type, json::object obj) {
  return json::serialize(json::object{{"type", type}, {"object", std::move(obj)}});
}

constexpr const char* kPods = "/api/v1/namespaces/ns/pods";

ListWatch Machine(ListWatchOptions o = {}) { return ListWatch(kPods, std::move(o), 42); }

TEST(ListWatchTest, PaginatedListThenWatchFromTheListsResourceVersion) {
  ListWatchOptions o;
  o.page_size = 2;
  o.label_selector = "app=vllm,tier in (a)";
  auto lw = Machine(o);
  Step s = lw.Start();
  EXPECT_EQ(s.kind, Step::Kind::kList);
  EXPECT_EQ(s.target,
            std::string(kPods) + "?limit=2&labelSelector=app%3Dvllm%2Ctier%20in%20%28a%29");
  std::vector<Change> changes;
  s = lw.OnListPage(Page({Pod("a", "5"), Pod("b", "6")}, "", "tok/1"), changes);
  EXPECT_TRUE(changes.empty());  // nothing until the list is complete
  EXPECT_FALSE(lw.synced());
  EXPECT_EQ(s.kind, Step::Kind::kList);
  EXPECT_NE(s.target.find("&continue=tok%2F1"), std::string::npos) << s.target;
  s = lw.OnListPage(Page({Pod("c", "7")}, "10"), changes);
  EXPECT_TRUE(lw.synced());
  EXPECT_EQ(changes.size(), 3u);
  EXPECT_EQ(lw.cache().size(), 3u);
  EXPECT_EQ(s.kind, Step::Kind::kWatch);
  EXPECT_NE(s.target.find("watch=1&allowWatchBookmarks=true&resourceVersion=10&timeoutSeconds="),
            std::string::npos)
      << s.target;
  // client-go: timeoutSeconds random in [5 min, 10 min].
  EXPECT_GE(s.timeout_s, 300);
  EXPECT_LE(s.timeout_s, 600);
  EXPECT_NE(s.target.find("labelSelector=app%3Dvllm"), std::string::npos);
}

TEST(ListWatchTest, WatchEventsUpdateTheCacheAndBookmarksOnlyTheResourceVersion) {
  auto lw = Machine();
  std::vector<Change> changes;
  lw.Start();
  lw.OnListPage(Page({Pod("a", "5")}, "5"), changes);
  changes.clear();
  EXPECT_TRUE(lw.OnWatchLine(Event("ADDED", Pod("b", "6")), changes));
  EXPECT_TRUE(lw.OnWatchLine(Event("MODIFIED", Pod("a", "7")), changes));
  EXPECT_TRUE(lw.OnWatchLine(Event("DELETED", Pod("b", "8")), changes));
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].type, ChangeType::kAdded);
  EXPECT_EQ(changes[1].type, ChangeType::kModified);
  EXPECT_EQ(changes[2].type, ChangeType::kDeleted);
  EXPECT_EQ(lw.resource_version(), "8");
  changes.clear();
  EXPECT_TRUE(lw.OnWatchLine(Event("BOOKMARK", Pod("", "12")), changes));
  EXPECT_TRUE(changes.empty());
  EXPECT_EQ(lw.resource_version(), "12");
  EXPECT_EQ(lw.cache().size(), 1u);
  // The server's timeoutSeconds ended the stream: watch again from the bookmark.
  Step s = lw.OnWatchEnded(WatchEnd::kClosed, 200, 300);
  EXPECT_EQ(s.kind, Step::Kind::kWatch);
  EXPECT_NE(s.target.find("resourceVersion=12"), std::string::npos);
}

TEST(ListWatchTest, GoneErrorEventRelistsAtOnceAndTheRelistReportsMissedDeletions) {
  auto lw = Machine();
  std::vector<Change> changes;
  lw.Start();
  lw.OnListPage(Page({Pod("a", "5"), Pod("b", "5")}, "5"), changes);
  changes.clear();
  json::object status{{"kind", "Status"},
                      {"code", 410},
                      {"reason", "Expired"},
                      {"message", "too old resource version: 5 (90)"}};
  EXPECT_FALSE(lw.OnWatchLine(Event("ERROR", status), changes));
  Step s = lw.OnWatchEnded(WatchEnd::kClosed);
  EXPECT_EQ(s.kind, Step::Kind::kList);  // no wait
  EXPECT_EQ(lw.relists(), 1);
  s = lw.OnListPage(Page({Pod("b", "5")}, "95"), changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].type, ChangeType::kDeleted);
  EXPECT_EQ(changes[0].key, "ns/a");
  EXPECT_NE(s.target.find("resourceVersion=95"), std::string::npos);
}

TEST(ListWatchTest, GoneHttpStatusRelistsToo) {
  auto lw = Machine();
  std::vector<Change> changes;
  lw.Start();
  lw.OnListPage(Page({}, "5"), changes);
  EXPECT_EQ(lw.OnWatchEnded(WatchEnd::kGone, 410).kind, Step::Kind::kList);
}

TEST(ListWatchTest, TransportErrorsBackOffThenResumeTheWatchFromTheLastResourceVersion) {
  auto lw = Machine();
  std::vector<Change> changes;
  lw.Start();
  lw.OnListPage(Page({Pod("a", "5")}, "5"), changes);
  Step s = lw.OnWatchEnded(WatchEnd::kTransportError);
  ASSERT_EQ(s.kind, Step::Kind::kWait);
  EXPECT_GE(s.delay_s, 0.8);
  EXPECT_LT(s.delay_s, 1.6);
  s = lw.Resume();
  EXPECT_EQ(s.kind, Step::Kind::kWatch);
  EXPECT_NE(s.target.find("resourceVersion=5"), std::string::npos);
  EXPECT_EQ(lw.cache().size(), 1u);  // the last state stays while the server is away
}

TEST(ListWatchTest, OtherWatchErrorsBackOffThenRelist) {
  auto lw = Machine();
  std::vector<Change> changes;
  lw.Start();
  lw.OnListPage(Page({}, "5"), changes);
  Step s = lw.OnWatchEnded(WatchEnd::kHttpError, 403);
  EXPECT_EQ(s.kind, Step::Kind::kWait);
  EXPECT_EQ(lw.Resume().kind, Step::Kind::kList);
  // A malformed line ends the watch the same way.
  lw.OnListPage(Page({}, "6"), changes);
  EXPECT_FALSE(lw.OnWatchLine("{not json", changes));
  EXPECT_EQ(lw.OnWatchEnded(WatchEnd::kClosed).kind, Step::Kind::kWait);
  EXPECT_EQ(lw.Resume().kind, Step::Kind::kList);
}

TEST(ListWatchTest, AVeryShortEmptyWatchIsAFailure) {
  auto lw = Machine();
  std::vector<Change> changes;
  lw.Start();
  lw.OnListPage(Page({}, "5"), changes);
  EXPECT_EQ(lw.OnWatchEnded(WatchEnd::kClosed, 200, 0.01).kind, Step::Kind::kWait);
  EXPECT_EQ(lw.Resume().kind, Step::Kind::kWatch);
}

TEST(ListWatchTest, ListFailuresBackOffExponentiallyWithJitterUpToTheCap) {
  ListWatchOptions o;
  auto lw = Machine(o);
  lw.Start();
  double base = 0.8;
  for (int i = 0; i < 10; ++i) {
    Step s = lw.OnListFailed(i % 2 == 0 ? 0 : 500);
    ASSERT_EQ(s.kind, Step::Kind::kWait);
    double expected = std::min(base, 30.0);
    EXPECT_GE(s.delay_s, expected) << i;
    EXPECT_LT(s.delay_s, 2 * expected) << i;
    base *= 2;
    EXPECT_EQ(lw.Resume().kind, Step::Kind::kList);
  }
  // A successful list resets the backoff.
  std::vector<Change> changes;
  lw.OnListPage(Page({}, "1"), changes);
  Step s = lw.OnWatchEnded(WatchEnd::kTransportError);
  EXPECT_LT(s.delay_s, 1.6);
}

TEST(ListWatchTest, NotAListIsAFailure) {
  auto lw = Machine();
  lw.Start();
  std::vector<Change> changes;
  EXPECT_EQ(lw.OnListPage("{\"kind\":\"Status\"}", changes).kind, Step::Kind::kWait);
  EXPECT_FALSE(lw.synced());
  EXPECT_EQ(lw.Resume().kind, Step::Kind::kList);
  EXPECT_EQ(
      lw.OnListPage("{\"metadata\":{\"resourceVersion\":\"3\"},\"items\":null}", changes).kind,
      Step::Kind::kWatch);
  EXPECT_TRUE(lw.synced());
}

TEST(BackoffTest, SameSeedSameDelays) {
  Backoff a({}, 7), b({}, 7);
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(a.Next(), b.Next());
}

}  // namespace
}  // namespace kinference::k8s
