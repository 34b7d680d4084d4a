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
// Thread-safety: Start/Stop/UpdateStats on the io thread; subscriber threads only post.
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

class KvFeeds : public std::enable_shared_from_this<KvFeeds> {
 public:
  explicit KvFeeds(std::shared_ptr<GatewayContext> ctx);
  ~KvFeeds();
  void Start();
  void Stop();  // joins the subscriber threads
  void UpdateStats(Stats& stats) const;
  bool empty() const { return feeds_.empty(); }

 private:
  struct Feed {
    size_t endpoint_index = 0;  // into ctx->endpoints
    std::string id;
    bool discover = false;
    bool discovery_in_flight = false;
    std::optional<KvSource> source;
    std::unique_ptr<kv::ZmqSubscriber> subscriber;
    std::string reason;    // why not live
    KvFeedSample carried;  // counters of subscriptions this one replaced
  };
  void Tick();
  void Discover(size_t feed);
  void Subscribe(Feed& feed, KvSource source);

  std::shared_ptr<GatewayContext> ctx_;
  boost::asio::steady_timer timer_;
  std::vector<Feed> feeds_;
  bool stopped_ = false;
};

}  // namespace kinference::gateway
