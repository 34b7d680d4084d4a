// The Kubernetes client (src/k8s) against a real API server: TLS and tokens, paginated
// list + watch into the cache, the real server's 410 Gone, an API server restart, and
// Lease leader election.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "k8s/elector.h"
#include "k8s/list_watch.h"
#include "k8s/reflector.h"
#include "k8s_env/io_thread.h"
#include "k8s_env/testenv.h"

namespace kinference::k8s {
namespace {

namespace json = boost::json;
using kinference::testing::IoThread;
using kinference::testing::TestEnv;
using kinference::testing::WaitFor;

std::string ConfigMap(const std::string& name, const std::string& value) {
  return json::serialize(json::object{{"apiVersion", "v1"},
                                      {"kind", "ConfigMap"},
                                      {"metadata", json::object{{"name", name}}},
                                      {"data", json::object{{"v", value}}}});
}

void Create(TestEnv* env, const std::string& ns, const std::string& name,
            const std::string& value) {
  auto r = env->Call("POST", CollectionPath(kConfigMaps, ns), ConfigMap(name, value));
  ASSERT_TRUE(r.ok() && r->ok()) << (r.ok() ? ApiErrorMessage(*r) : r.status().message());
}

TEST(K8sClientTest, VerifiesTheServerCertificateAndSendsTheToken) {
  TestEnv* env = TestEnv::Get();
  ASSERT_NE(env, nullptr);
  auto ok = env->Call("GET", "/api/v1/namespaces/default");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->status, 200);
  // Another CA: the handshake fails; never a response.
  ClusterConfig wrong_ca = env->config();
  wrong_ca.ca_file = "/etc/ssl/certs/ca-certificates.crt";
  auto bad = CallSync(wrong_ca, "GET", "/api/v1/namespaces/default");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tls"), std::string::npos) << bad.status().message();
  // A wrong token: 401 from the server, as a value.
  ClusterConfig wrong_token = env->config();
  wrong_token.token = "not-a-token";
  auto unauth = CallSync(wrong_token, "GET", "/api/v1/namespaces/default");
  ASSERT_TRUE(unauth.ok());
  EXPECT_EQ(unauth->status, 401);
}

TEST(K8sClientTest, ATokenFileIsReadAgainAfterA401) {
  TestEnv* env = TestEnv::Get();
  ASSERT_NE(env, nullptr);
  std::string file = env->dir() + "/rotating-token";
  std::ofstream(file) << "not-a-token\n";
  ClusterConfig c = env->config();
  c.token.clear();
  c.token_file = file;
  IoThread io;
  auto client = std::make_shared<RestClient>(io.io().get_executor(), c);
  auto get = [&] {
    std::promise<Result<ApiResponse>> p;
    auto f = p.get_future();
    io.Run([&] {
      client->Get("/api/v1/namespaces/default", [&](Result<ApiResponse> r) { p.set_value(r); });
    });
    return f.get();
  };
  auto first = get();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->status, 401);
  std::ofstream(file) << env->Env("K8S_TOKEN") << "\n";  // the kubelet rotated it
  auto second = get();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->status, 200);
}

struct Recorder {
  std::mutex mu;
  std::vector<std::string> events;  // "added ns/name"
  void Add(const std::vector<Change>& changes) {
    std::lock_guard l(mu);
    for (const auto& c : changes) events.push_back(std::string(ToString(c.type)) + " " + c.key);
  }
  size_t Count(const std::string& e) {
    std::lock_guard l(mu);
    return static_cast<size_t>(std::count(events.begin(), events.end(), e));
  }
};

TEST(K8sClientTest, ReflectorListsInPagesThenWatchesEveryChange) {
  TestEnv* env = TestEnv::Get();
  ASSERT_NE(env, nullptr);
  std::string ns = env->NewNamespace("reflector");
  for (int i = 0; i < 5; ++i) Create(env, ns, "cm-" + std::to_string(i), "a");
  IoThread io;
  auto client = std::make_shared<RestClient>(io.io().get_executor(), env->config());
  Recorder rec;
  ReflectorOptions o;
  o.type = kConfigMaps;
  o.ns = ns;
  o.list_watch.page_size = 2;  // three pages
  auto reflector = io.Run([&] {
    auto r = Reflector::Create(client, o, [&](const std::vector<Change>& c) { rec.Add(c); });
    r->Start();
    return r;
  });
  ASSERT_TRUE(WaitFor([&] { return io.Run([&] { return reflector->synced(); }); }, 30));
  // kube-root-ca.crt is not published here (no controller-manager): exactly our five.
  EXPECT_EQ(io.Run([&] { return reflector->cache().size(); }), 5u);
  Create(env, ns, "cm-new", "b");
  ASSERT_TRUE(
      env->Call("PATCH", ObjectPath(kConfigMaps, ns, "cm-0"), R"({"data":{"v":"z"}})", kMergePatch)
          .ok());
  ASSERT_TRUE(env->Call("DELETE", ObjectPath(kConfigMaps, ns, "cm-1")).ok());
  ASSERT_TRUE(WaitFor([&] { return rec.Count("deleted " + ns + "/cm-1") == 1; }, 30));
  EXPECT_EQ(rec.Count("added " + ns + "/cm-new"), 1u);
  EXPECT_EQ(rec.Count("modified " + ns + "/cm-0"), 1u);
  auto value = io.Run([&] {
    auto o = reflector->cache().Get(ns + "/cm-0");
    return o ? std::string(StringAt(*o, {"data", "v"})) : "";
  });
  EXPECT_EQ(value, "z");
  io.Run([&] { reflector->Stop(); });
}

// One API server restart (they are slow on a loaded machine) covers three things: the
// reflector serves its last state while the server is away, the real server's 410 Gone for a
// compacted resourceVersion is what ListWatch understands, and the reflector relists and
// catches up.
TEST(K8sClientTest, AcrossAnApiServerRestartAndCompactionTheReflectorRelistsAndCatchesUp) {
  TestEnv* env = TestEnv::Get();
  ASSERT_NE(env, nullptr);
  std::string ns = env->NewNamespace("restart");
  Create(env, ns, "before", "a");
  IoThread io;
  auto client = std::make_shared<RestClient>(io.io().get_executor(), env->config());
  Recorder rec;
  ReflectorOptions o;
  o.type = kConfigMaps;
  o.ns = ns;
  auto reflector = io.Run([&] {
    auto r = Reflector::Create(client, o, [&](const std::vector<Change>& c) { rec.Add(c); });
    r->Start();
    return r;
  });
  ASSERT_TRUE(WaitFor([&] { return io.Run([&] { return reflector->synced(); }); }, 30));
  std::string rv = io.Run([&] { return reflector->resource_version(); });
  // A write elsewhere moves etcd past `rv`; compacting then makes `rv` unavailable, and the
  // restart empties the watch cache that would otherwise still serve it.
  Create(env, env->NewNamespace("elsewhere"), "bump", "a");
  ASSERT_TRUE(env->StopApiServer());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(io.Run([&] { return reflector->cache().size(); }), 1u);  // the last state stays
  ASSERT_TRUE(env->CompactEtcd());
  ASSERT_TRUE(env->StartApiServer());
  auto restarted = std::chrono::steady_clock::now();

  // The real server's answer to a watch from `rv`, through ListWatch: relist at once.
  ListWatch machine(CollectionPath(kConfigMaps, ns), {}, 1);
  std::promise<Step> ended;
  auto done = ended.get_future();
  auto status = std::make_shared<int>(0);
  auto call = io.Run([&] {
    RestClient::WatchCallbacks cb;
    cb.on_status = [status](int s) { *status = s; };
    cb.on_line = [&machine, status](std::string_view line) {
      std::vector<Change> changes;
      if (*status == 200) machine.OnWatchLine(line, changes);
    };
    cb.on_done = [&machine, &ended, status](Status) {
      ended.set_value(
          machine.OnWatchEnded(*status == 410 ? WatchEnd::kGone : WatchEnd::kClosed, *status, 5));
    };
    return client->Watch(CollectionPath(kConfigMaps, ns) +
                             "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv +
                             "&timeoutSeconds=5",
                         30, std::move(cb));
  });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(done.get().kind, Step::Kind::kList)
      << "status " << *status << ": " << machine.last_error();
  EXPECT_NE(machine.last_error().find("410"), std::string::npos) << machine.last_error();

  Create(env, ns, "after", "b");
  ASSERT_TRUE(WaitFor([&] { return rec.Count("added " + ns + "/after") == 1; }, 60));
  double caught_up_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - restarted).count();
  std::cout << "[ measured ] reflector caught up " << caught_up_s
            << " s after the API server was ready again (relists: "
            << io.Run([&] { return reflector->relists(); }) << ")\n";
  EXPECT_EQ(rec.Count("deleted " + ns + "/before"), 0u);
  EXPECT_EQ(io.Run([&] { return reflector->cache().size(); }), 2u);
  EXPECT_GE(io.Run([&] { return reflector->relists(); }), 1);
  io.Run([&] { reflector->Stop(); });
}

TEST(K8sClientTest, LeaseElectionHasOneLeaderAndHandsOverOnReleaseAndOnExpiry) {
  TestEnv* env = TestEnv::Get();
  ASSERT_NE(env, nullptr);
  std::string ns = env->NewNamespace("lease");
  LeaderElectionConfig c;
  c.ns = ns;
  c.lease_name = "test";
  c.lease_duration_s = 3;
  c.renew_deadline_s = 2;
  c.retry_period_s = 0.25;
  auto start = [&](IoThread& io, const std::string& id, std::atomic<int>& leading) {
    auto client = std::make_shared<RestClient>(io.io().get_executor(), env->config());
    LeaderElectionConfig cc = c;
    cc.identity = id;
    return io.Run([&] {
      auto e =
          LeaderElector::Create(client, cc, {[&leading] { ++leading; }, [&leading] { --leading; }});
      e->Start();
      return e;
    });
  };
  IoThread io_a, io_b;
  std::atomic<int> a{0}, b{0};
  auto ea = start(io_a, "a", a);
  ASSERT_TRUE(WaitFor([&] { return a == 1; }, 20));
  auto eb = start(io_b, "b", b);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(b, 0);  // a renews; b waits
  // Release: b takes over at its next attempt, well within the lease duration.
  auto t0 = std::chrono::steady_clock::now();
  io_a.Run([&] { ea->Stop(); });
  ASSERT_TRUE(WaitFor([&] { return b == 1; }, 10));
  double release_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(a, 0);
  // Crash: b's loop stops without releasing; a new candidate waits for the lease to expire.
  io_b.Stop();
  IoThread io_c;
  std::atomic<int> cl{0};
  t0 = std::chrono::steady_clock::now();
  auto ec = start(io_c, "c", cl);
  ASSERT_TRUE(WaitFor([&] { return cl == 1; }, 20));
  double expiry_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(expiry_s, 2.5);  // not before the 3 s lease expired (as c observed it)
  std::cout << "[ measured ] lease handover: " << release_s << " s after release, " << expiry_s
            << " s after the holder died (lease 3 s)\n";
  auto lease = env->Call("GET", ObjectPath(kLeases, ns, "test"));
  ASSERT_TRUE(lease.ok() && lease->ok());
  auto obj = ParseObject(*lease);
  EXPECT_EQ(StringAt(*obj, {"spec", "holderIdentity"}), "c");
  EXPECT_EQ(obj->at("spec").at("leaseTransitions").as_int64(), 2);
  io_c.Run([&] { ec->Stop(); });
}

}  // namespace
}  // namespace kinference::k8s
