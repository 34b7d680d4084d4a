// GatewayContext's endpoint table, as the config file fills it at start-up and the
// Kubernetes source changes it while the gateway runs (AddEndpoint / RemoveEndpoint).
#include "gateway/context.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>

#include "gateway/upstream/kv_feeds.h"

namespace kinference::gateway {
namespace {

GatewayConfig OnePool() {
  return ParseGatewayConfig("pools: [{name: p, model: m, endpoints: ['http://127.0.0.1:1']}]");
}

Endpoint Local(const std::string& id, const std::string& model, uint16_t port) {
  Endpoint ep;
  ep.info = routing::EndpointInfo{id, model, id.substr(0, id.find('/'))};  // "<pool>/<pod>"
  ep.address = EndpointAddress{"http://127.0.0.2:" + std::to_string(port), "127.0.0.2", port};
  return ep;
}

TEST(GatewayContext, EndpointsAddedAndRemovedChangeModelsAndCandidates) {
  boost::asio::io_context io;
  GatewayContext ctx(OnePool(), io.get_executor());
  EXPECT_EQ(ctx.Models(), (std::vector<std::string>{"m"}));
  ctx.AddEndpoint(Local("k8s-pool/pod-a", "m2", 8000));
  ctx.AddEndpoint(Local("k8s-pool/pod-b", "m", 8000));
  EXPECT_EQ(ctx.Models(), (std::vector<std::string>{"m", "m2"}));
  EXPECT_TRUE(ctx.ServesModel("m2"));
  EXPECT_EQ(ctx.EndpointsFor("m"), (std::vector<routing::EndpointId>{"p/0", "k8s-pool/pod-b"}));
  EXPECT_NE(ctx.stats.Exposition().find("k8s-pool/pod-a"), std::string::npos);

  ctx.RemoveEndpoint("k8s-pool/pod-a");
  EXPECT_FALSE(ctx.ServesModel("m2"));
  EXPECT_EQ(ctx.Find("k8s-pool/pod-a"), nullptr);
  EXPECT_EQ(ctx.stats.Exposition().find("k8s-pool/pod-a"), std::string::npos)
      << "a removed endpoint's series stays";
  // The router no longer offers it.
  routing::RequestFeatures f;
  f.request_id = "r1";
  f.model = "m2";
  std::vector<routing::EndpointId> removed{"k8s-pool/pod-a"};
  auto picked = ctx.router.Pick(f, removed, "round-robin", ctx.clock.Now());
  EXPECT_FALSE(picked.ok());
  ctx.RemoveEndpoint("unknown");  // no-op
  EXPECT_EQ(ctx.endpoints.size(), 2u);
}

TEST(GatewayContext, AddingAnExistingIdReplacesIt) {
  boost::asio::io_context io;
  GatewayContext ctx(OnePool(), io.get_executor());
  ctx.AddEndpoint(Local("k8s-pool/pod-a", "m", 8000));
  ctx.AddEndpoint(Local("k8s-pool/pod-a", "m3", 9000));
  ASSERT_NE(ctx.Find("k8s-pool/pod-a"), nullptr);
  EXPECT_EQ(ctx.Find("k8s-pool/pod-a")->address.port, 9000);
  EXPECT_EQ(ctx.EndpointsFor("m3").size(), 1u);
  EXPECT_EQ(ctx.endpoints.size(), 2u);
}

TEST(GatewayContext, TenantModelsLimitOnlyListedTenants) {
  boost::asio::io_context io;
  GatewayContext ctx(OnePool(), io.get_executor());
  ctx.tenant_models["acme"] = {"m"};
  EXPECT_TRUE(ctx.TenantMayUse("acme", "m"));
  EXPECT_FALSE(ctx.TenantMayUse("acme", "m2"));
  EXPECT_TRUE(ctx.TenantMayUse("other", "m2"));
}

// --kubernetes: the config file's pool entry without endpoints holds the settings of the
// InferencePool of that name.
GatewayConfig SettingsPool(const std::string& extra = "") {
  return ParseGatewayConfig("pools: [{name: k8s-pool, max_in_flight: 2" + extra + "}]",
                            ConfigMode::kKubernetes);
}

TEST(GatewayContext, AddedEndpointsAreRegisteredWithAdmissionAndPassiveHealthAndLeaveBoth) {
  boost::asio::io_context io;
  GatewayContext ctx(SettingsPool(), io.get_executor());
  EXPECT_TRUE(ctx.endpoints.empty());
  ctx.AddEndpoint(Local("k8s-pool/pod-a", "m", 8000));
  auto& ac = ctx.admission.controller();
  EXPECT_EQ(ac.PoolOf("k8s-pool/pod-a"), "k8s-pool");
  EXPECT_EQ(ac.Limit("k8s-pool/pod-a"), 2) << "the pool's max_in_flight";
  EXPECT_TRUE(ac.HasRoom("k8s-pool/pod-a"));

  // A refused connection ejects it: unhealthy for the router's candidates and admission.
  ctx.OnRequestResult("k8s-pool/pod-a", routing::RequestResult::kConnectFailure);
  EXPECT_FALSE(ctx.Find("k8s-pool/pod-a")->healthy);
  EXPECT_TRUE(ctx.outlier.Ejected("k8s-pool/pod-a", ctx.clock.Now()));
  EXPECT_FALSE(ac.HasRoom("k8s-pool/pod-a"));

  ctx.RemoveEndpoint("k8s-pool/pod-a");
  EXPECT_EQ(ac.PoolOf("k8s-pool/pod-a"), "");
  EXPECT_FALSE(ctx.outlier.Ejected("k8s-pool/pod-a", ctx.clock.Now()));
  EXPECT_EQ(ctx.outlier.ejections_total("k8s-pool/pod-a"), 0u);
  EXPECT_EQ(ctx.stats.Exposition().find("metrics_stale{endpoint=\"k8s-pool/pod-a\""),
            std::string::npos);

  // The same id again (a Pod Ready again) starts healthy, with room, not ejected.
  ctx.AddEndpoint(Local("k8s-pool/pod-a", "m", 8000));
  EXPECT_TRUE(ctx.Find("k8s-pool/pod-a")->healthy);
  EXPECT_TRUE(ac.HasRoom("k8s-pool/pod-a"));
  EXPECT_FALSE(ctx.outlier.Ejected("k8s-pool/pod-a", ctx.clock.Now()));
  // An endpoint of a pool without settings has no limit; a provider's is its own queue.
  ctx.AddEndpoint(Local("other/pod-b", "m", 8001));
  EXPECT_EQ(ac.Limit("other/pod-b"), admission::kUnlimited);
}

TEST(GatewayContext, KvEventFeedsFollowEndpointsOfAPoolWithKvEvents) {
  boost::asio::io_context io;
  auto ctx = std::make_shared<GatewayContext>(SettingsPool(", kv_events: {tokenizer: engine-sim}"),
                                              io.get_executor());
  auto feeds = std::make_shared<KvFeeds>(ctx);
  feeds->Start();
  EXPECT_TRUE(feeds->empty());
  ctx->AddEndpoint(Local("k8s-pool/pod-a", "m", 1));  // port 1: discovery is refused
  ctx->AddEndpoint(Local("plain/pod-b", "m2", 1));    // no kv_events: no feed
  EXPECT_FALSE(feeds->empty());
  EXPECT_EQ(ctx->kv_models.count("m"), 1u) << "the model's prompts become engine block keys";
  EXPECT_EQ(ctx->kv_models.count("m2"), 0u);
  feeds->UpdateStats(ctx->stats);
  const std::string live = "kinference_kv_events_live{endpoint=\"k8s-pool/pod-a\"} 0";
  EXPECT_NE(ctx->stats.Exposition().find(live), std::string::npos) << ctx->stats.Exposition();
  EXPECT_EQ(ctx->stats.Exposition().find("kv_events_live{endpoint=\"plain/pod-b\""),
            std::string::npos);

  ctx->RemoveEndpoint("k8s-pool/pod-a");
  EXPECT_TRUE(feeds->empty());
  EXPECT_EQ(ctx->kv_models.count("m"), 0u);
  feeds->UpdateStats(ctx->stats);
  EXPECT_EQ(ctx->stats.Exposition().find("kv_events_live{endpoint=\"k8s-pool/pod-a\""),
            std::string::npos);
  // Added again: a feed again. Its discovery answers (refused) after this; nothing breaks.
  ctx->AddEndpoint(Local("k8s-pool/pod-a", "m", 1));
  EXPECT_FALSE(feeds->empty());
  io.run_for(std::chrono::milliseconds(300));
  feeds->Stop();
  io.run_for(std::chrono::milliseconds(300));
}

TEST(GatewayConfigKubernetes, PoolSettingsWithoutEndpointsOnlyWithKubernetes) {
  EXPECT_THROW(ParseGatewayConfig("pools: [{name: k8s-pool, max_in_flight: 2}]"), ConfigError);
  auto c = SettingsPool(", kv_events: {tokenizer: engine-sim}");
  ASSERT_EQ(c.pools.size(), 1u);
  EXPECT_TRUE(c.pools[0].endpoints.empty());
  EXPECT_TRUE(c.pools[0].model.empty());
  try {
    ParseGatewayConfig(
        "pools: [{name: k8s-pool, kv_events: {tokenizer: engine-sim, endpoints: ['tcp://a:1']}}]",
        ConfigMode::kKubernetes);
    ADD_FAILURE() << "configured publishers for Pods accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pools[0].kv_events.endpoints"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kinference::gateway
