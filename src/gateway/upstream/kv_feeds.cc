#include "gateway/upstream/kv_feeds.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <chrono>

#include "http/client.h"

namespace kinference::gateway {
namespace json = boost::json;

namespace {

// "tcp://*:5557" -> "tcp://HOST:5557" for wildcard hosts; others unchanged.
std::string Reachable(const std::string& ep, const std::string& http_host) {
  constexpr std::string_view kTcp = "tcp://";
  size_t colon = ep.rfind(':');
  if (!ep.starts_with(kTcp) || colon == std::string::npos || colon < kTcp.size()) return ep;
  std::string host = ep.substr(kTcp.size(), colon - kTcp.size());
  if (host != "*" && host != "0.0.0.0" && host != "[::]" && host != "::") return ep;
  std::string h = http_host.find(':') != std::string::npos ? "[" + http_host + "]" : http_host;
  return std::string(kTcp) + h + ep.substr(colon);
}

}  // namespace

Result<KvSource> ParseKvEventSources(std::string_view body, const std::string& http_host) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return InvalidArgument("/kv_event_sources: not a JSON object");
  const json::value* rank0 = v.as_object().if_contains("0");
  if (!rank0 || !rank0->is_object())
    return Status(ErrorCode::kNotFound, "/kv_event_sources: no publisher (KV events off)");
  const json::object& c = rank0->as_object();
  auto str = [&](const char* key) -> std::string {
    const json::value* x = c.if_contains(key);
    return x && x->is_string() ? std::string(x->as_string()) : std::string();
  };
  const json::value* enabled = c.if_contains("enable_kv_cache_events");
  if ((enabled && enabled->is_bool() && !enabled->as_bool()) || str("publisher") == "null")
    return Status(ErrorCode::kNotFound, "/kv_event_sources: KV events not enabled");
  KvSource s;
  s.endpoint = Reachable(str("endpoint"), http_host);
  if (!s.endpoint.starts_with("tcp://"))
    return InvalidArgument("/kv_event_sources: endpoint '" + s.endpoint + "' is not tcp://");
  std::string replay = str("replay_endpoint");
  if (!replay.empty()) s.replay_endpoint = Reachable(replay, http_host);
  s.topic = str("topic");
  return s;
}

KvFeeds::KvFeeds(std::shared_ptr<GatewayContext> ctx)
    : ctx_(std::move(ctx)), timer_(ctx_->executor) {
  for (const Endpoint& ep : ctx_->endpoints) {
    if (auto f = MakeFeed(ep)) feeds_.push_back(std::move(*f));
  }
}

KvFeeds::~KvFeeds() { Stop(); }

std::optional<KvFeeds::Feed> KvFeeds::MakeFeed(const Endpoint& ep) const {
  if (ep.provider) return std::nullopt;
  const PoolConfig* pool = ctx_->PoolSettings(ep.info.pool);
  if (pool == nullptr || !pool->kv_events) return std::nullopt;
  Feed f;
  f.id = ep.info.id;
  f.alive = std::make_shared<bool>(true);
  const KvEventsConfig& kc = *pool->kv_events;
  // Configured publishers belong to the file's endpoints "<pool>/<index>"; endpoints the
  // cluster adds ("<pool>/<pod>") and pools without a list discover theirs.
  size_t at = pool->endpoints.size();
  for (size_t i = 0; i < pool->endpoints.size(); ++i) {
    if (ep.info.id == pool->name + "/" + std::to_string(i)) at = i;
  }
  if (kc.endpoints.empty() || at >= kc.endpoints.size()) {
    f.discover = true;
    f.reason = "not discovered yet";
  } else {
    f.source = KvSource{kc.endpoints[at],
                        kc.replay_endpoints.empty() ? "" : kc.replay_endpoints[at], kc.topic};
  }
  return f;
}

KvFeeds::Feed* KvFeeds::FindFeed(const std::string& id) {
  for (Feed& f : feeds_)
    if (f.id == id) return &f;
  return nullptr;
}

void KvFeeds::Start() {
  stopped_ = false;
  if (!observing_) ctx_->endpoint_observers.push_back(weak_from_this());
  observing_ = true;
  for (Feed& f : feeds_) {
    if (f.source && !f.subscriber) Subscribe(f, *f.source);
  }
  if (std::any_of(feeds_.begin(), feeds_.end(), [](const Feed& f) { return f.discover; })) Tick();
}

void KvFeeds::Stop() {
  stopped_ = true;
  timer_.cancel();
  for (Feed& f : feeds_) Unsubscribe(f);  // joins its thread
}

void KvFeeds::OnEndpointAdded(const Endpoint& ep) {
  if (stopped_) return;
  OnEndpointRemoved(ep.info.id);  // an id added again starts afresh
  auto f = MakeFeed(ep);
  if (!f) return;
  feeds_.push_back(std::move(*f));
  Feed& added = feeds_.back();
  if (added.source) {
    Subscribe(added, *added.source);
  } else if (!ticking_) {
    Tick();
  } else {
    Discover(added.id);  // at once, not at the next tick
  }
}

void KvFeeds::OnEndpointRemoved(const std::string& id) {
  auto it = std::find_if(feeds_.begin(), feeds_.end(), [&](const Feed& f) { return f.id == id; });
  if (it == feeds_.end()) return;
  Unsubscribe(*it);
  spdlog::info("kv events {}: feed removed with its endpoint", id);
  feeds_.erase(it);
}

void KvFeeds::Unsubscribe(Feed& f) {
  if (f.alive) *f.alive = false;
  f.alive.reset();
  if (f.subscriber) f.subscriber->Stop();  // joins its thread
  f.subscriber.reset();
}

void KvFeeds::Tick() {
  ticking_ = !stopped_;
  if (stopped_) return;
  std::vector<std::string> due;
  for (const Feed& f : feeds_) {
    if (f.discover && !f.discovery_in_flight && !(f.subscriber && f.subscriber->live()))
      due.push_back(f.id);
  }
  for (const auto& id : due) Discover(id);
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(ctx_->config.RealSeconds(ctx_->config.scrape_interval_s))));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->Tick();
  });
}

void KvFeeds::Discover(const std::string& id) {
  Feed* f = FindFeed(id);
  const Endpoint* ep = ctx_->Find(id);
  if (f == nullptr || ep == nullptr || f->discovery_in_flight) return;
  f->discovery_in_flight = true;
  http::ClientRequest req;
  req.method = "GET";
  req.host = ep->address.host;
  req.port = ep->address.port;
  req.target = "/kv_event_sources";
  req.content_type.clear();
  double limit = std::max(1.0, ctx_->config.RealSeconds(ctx_->config.scrape_interval_s));
  req.connect_timeout_s = req.header_timeout_s = req.idle_timeout_s = limit;
  // The feed and endpoint are looked up again by id (and the token compared): either may
  // have been removed, or removed and added again, while the request was out.
  http::Fetch(ctx_->executor, std::move(req),
              [self = shared_from_this(), id, token = f->alive,
               host = ep->address.host](Result<http::Response> r) {
                Feed* found = self->FindFeed(id);
                if (found == nullptr || found->alive != token) return;
                Feed& f = *found;
                f.discovery_in_flight = false;
                if (self->stopped_) return;
                Result<KvSource> s = !r.ok() ? Result<KvSource>(r.status())
                                     : r->status != 200
                                         ? Result<KvSource>(Status(ErrorCode::kUnavailable,
                                                                   "/kv_event_sources: status " +
                                                                       std::to_string(r->status)))
                                         : ParseKvEventSources(r->body, host);
                if (!s.ok()) {
                  if (f.reason != s.status().message())
                    spdlog::info("kv events {}: {}", f.id, s.status().message());
                  if (!f.subscriber) f.reason = s.status().message();
                  return;
                }
                if (f.subscriber && f.source == *s) return;  // same publisher: keep waiting
                self->Subscribe(f, std::move(*s));
              });
}

namespace {
void AddCounters(KvFeedSample& s, const kv::SubscriberCounters& c) {
  s.batches += c.batches;
  s.decode_errors += c.decode_errors;
  s.gaps += c.gaps;
  s.replayed += c.replayed;
  s.resyncs += c.resyncs;
  s.restarts += c.restarts;
  s.disconnects += c.disconnects;
}
}  // namespace

void KvFeeds::Subscribe(Feed& f, KvSource source) {
  if (f.subscriber) {
    f.subscriber->Stop();
    AddCounters(f.carried, f.subscriber->counters());
    f.subscriber.reset();
  }
  // A new token: batches the replaced subscription posted are dropped. A discovery in
  // flight keeps the old token and is ignored when it answers (this one replaced it).
  if (f.alive) *f.alive = false;
  f.alive = std::make_shared<bool>(true);
  f.discovery_in_flight = false;
  ctx_->router.ClearKvEvents(f.id);
  ctx_->router.SetKvEventsLive(f.id, false);
  f.source = source;
  kv::SubscriberOptions o;
  o.endpoint = source.endpoint;
  o.replay_endpoint = source.replay_endpoint;
  o.topic = source.topic;
  kv::SubscriberSink sink;
  auto ctx = ctx_;
  const std::string id = f.id;
  std::shared_ptr<bool> alive = f.alive;
  sink.on_events = [ctx, id, alive](bool clear, std::vector<kv::EventBatch> batches) {
    boost::asio::post(ctx->executor, [ctx, id, alive, clear, batches = std::move(batches)] {
      if (!*alive) return;  // replaced or removed (read on the io thread only)
      if (clear) ctx->router.ClearKvEvents(id);
      for (const auto& b : batches) ctx->router.OnKvEvents(id, b);
    });
  };
  sink.on_state = [ctx, id, alive](bool live, const std::string& reason) {
    boost::asio::post(ctx->executor, [ctx, id, alive, live, reason] {
      if (!*alive) return;
      ctx->router.SetKvEventsLive(id, live);
      if (live) {
        spdlog::info("kv events {}: live", id);
      } else {
        spdlog::warn("kv events {}: not live ({}); approximate prefix index", id, reason);
      }
    });
  };
  auto sub = kv::ZmqSubscriber::Start(std::move(o), std::move(sink));
  if (!sub.ok()) {
    f.reason = sub.status().message();
    spdlog::warn("kv events {}: {}", f.id, f.reason);
    return;
  }
  f.subscriber = std::move(*sub);
  f.reason = "no batch yet";
  spdlog::info("kv events {}: subscribed to {} (replay {}, topic '{}')", f.id, source.endpoint,
               source.replay_endpoint.empty() ? "none" : source.replay_endpoint, source.topic);
}

void KvFeeds::UpdateStats(Stats& stats) const {
  for (const Feed& f : feeds_) {
    KvFeedSample s = f.carried;
    if (auto idx = ctx_->router.KvIndex(f.id)) {
      s.live = idx->live;
      s.index_blocks = idx->blocks;
    }
    if (f.subscriber) AddCounters(s, f.subscriber->counters());
    stats.SetKvFeed(f.id, s);
  }
}

}  // namespace kinference::gateway
