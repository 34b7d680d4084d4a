// KvFeeds: the gateway's subscriptions to the KV-event publishers of local endpoints whose
// pool has `kv_events` (config/config.h), feeding the router's precise prefix index
// (Router::OnKvEvents / ClearKvEvents / SetKvEventsLive; docs/kv-events.md).
//
// Per endpoint: a kv::ZmqSubscriber (its own thread: ordering, gaps filled from the replay
// socket, restarts, a dead publisher, decoder failures; kv/zmq/subscriber.h) whose batches
// and live/not-live changes are posted to the gateway's io thread and applied there to
// the router. Where the publisher comes from:
//   configured  pool.kv_events.endpoints[i] (+ replay_endpoints[i], topic);
//   discovered  GET /kv_event_sources of the endpoint (vLLM's route: {"<dp rank>":
//               KVEventsConfig}); rank "0"'s endpoint, replay_endpoint and topic, with a
//               wildcard host (`*`, 0.0.0.0, `[::]`: vLLM binds those) replaced by the
//               endpoint's HTTP host. Asked again every scrape interval while the feed is
//               not live; a changed address (a restarted engine on other ports)
//               replaces the subscription.
// Not live (before the first batch, publisher gone, decoder failure, not discovered yet):
// the router matches that endpoint's requests with its approximate index.
//
// Metrics (gateway/stats/stats.h, refreshed by UpdateStats before each exposition): per
// endpoint live, batches, decode errors, gaps, replayed batches, resyncs, publisher
// restarts, disconnects, blocks in the precise index.
//
// Endpoints added or removed at run time (--kubernetes: ready Pods of an InferencePool whose
// config.pools entry has kv_events; discovered, since a Pod's publisher address is its
// own) get or lose their feed through GatewayContext's EndpointObserver calls: a removed
// endpoint's subscriber is stopped (its thread joined) before RemoveEndpoint returns, and
// batches it had already posted are dropped (each subscription has its own token, checked
// on the io thread), so an id added again never sees the earlier Pod's blocks.
//
// Thread-safety: Start/Stop/UpdateStats and the observer calls on the io thread;
// subscriber threads only post to it.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/context.h"
#include "kv/zmq/subscriber.h"

namespace kinference::gateway {

// A publisher address from /kv_event_sources' body for the endpoint at `http_host`, or an
// error when the body holds none (publishing off: {}). Pure; exposed for tests.
struct KvSource {
  std::string endpoint, replay_endpoint, topic;
  bool operator==(const KvSource&) const = default;
};
Result<KvSource> ParseKvEventSources(std::string_view body, const std::string& http_host);

class KvFeeds : public EndpointObserver, public std::enable_shared_from_this<KvFeeds> {
 public:
  explicit KvFeeds(std::shared_ptr<GatewayContext> ctx);
  ~KvFeeds();
  // Subscribes (or starts discovery) and registers with the context for later endpoints.
  void Start();
  void Stop();  // joins the subscriber threads
  void OnEndpointAdded(const Endpoint& ep) override;
  void OnEndpointRemoved(const std::string& id) override;
  void UpdateStats(Stats& stats) const;
  bool empty() const { return feeds_.empty(); }

 private:
  struct Feed {
    std::string id;  // the endpoint's (GatewayContext::Find)
    bool discover = false;
    bool discovery_in_flight = false;
    std::optional<KvSource> source;
    std::unique_ptr<kv::ZmqSubscriber> subscriber;
    std::string reason;    // why not live
    KvFeedSample carried;  // counters of subscriptions this one replaced
    // False once the subscription is replaced or the feed removed: its posted batches
    // are dropped. Read and written on the io thread only.
    std::shared_ptr<bool> alive;
  };
  // A feed for `ep` when its pool has kv_events; none otherwise.
  std::optional<Feed> MakeFeed(const Endpoint& ep) const;
  Feed* FindFeed(const std::string& id);
  void Tick();
  void Discover(const std::string& id);
  void Subscribe(Feed& feed, KvSource source);
  static void Unsubscribe(Feed& feed);

  std::shared_ptr<GatewayContext> ctx_;
  boost::asio::steady_timer timer_;
  std::vector<Feed> feeds_;
  bool stopped_ = false;
  bool ticking_ = false;    // the discovery timer runs
  bool observing_ = false;  // in ctx_->endpoint_observers
};

}  // namespace kinference::gateway
