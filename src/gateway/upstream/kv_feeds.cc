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
  for (size_t i = 0; i < ctx_->endpoints.size(); ++i) {
    const Endpoint& ep = ctx_->endpoints[i];
    if (ep.provider) continue;
    for (const PoolConfig& pool : ctx_->config.pools) {
      if (pool.name != ep.info.pool || !pool.kv_events) continue;
      Feed f;
      f.endpoint_index = i;
      f.id = ep.info.id;
      const size_t at = std::stoul(ep.info.id.substr(ep.info.id.rfind('/') + 1));
      const KvEventsConfig& kc = *pool.kv_events;
      if (kc.endpoints.empty()) {
        f.discover = true;
        f.reason = "not discovered yet";
      } else {
        f.source = KvSource{kc.endpoints[at],
                            kc.replay_endpoints.empty() ? "" : kc.replay_endpoints[at], kc.topic};
      }
      feeds_.push_back(std::move(f));
    }
  }
}

KvFeeds::~KvFeeds() { Stop(); }

void KvFeeds::Start() {
  stopped_ = false;
  for (Feed& f : feeds_) {
    if (f.source && !f.subscriber) Subscribe(f, *f.source);
  }
  if (std::any_of(feeds_.begin(), feeds_.end(), [](const Feed& f) { return f.discover; })) Tick();
}

void KvFeeds::Stop() {
  stopped_ = true;
  timer_.cancel();
  for (Feed& f : feeds_) f.subscriber.reset();  // joins its thread
}

void KvFeeds::Tick() {
  if (stopped_) return;
  for (size_t i = 0; i < feeds_.size(); ++i) {
    Feed& f = feeds_[i];
    if (f.discover && !f.discovery_in_flight && !(f.subscriber && f.subscriber->live()))
      Discover(i);
  }
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(ctx_->config.RealSeconds(ctx_->config.scrape_interval_s))));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->Tick();
  });
}

void KvFeeds::Discover(size_t index) {
  Feed& f = feeds_[index];
  const Endpoint& ep = ctx_->endpoints[f.endpoint_index];
  f.discovery_in_flight = true;
  http::ClientRequest req;
  req.method = "GET";
  req.host = ep.address.host;
  req.port = ep.address.port;
  req.target = "/kv_event_sources";
  req.content_type.clear();
  double limit = std::max(1.0, ctx_->config.RealSeconds(ctx_->config.scrape_interval_s));
  req.connect_timeout_s = req.header_timeout_s = req.idle_timeout_s = limit;
  http::Fetch(
      ctx_->executor, std::move(req), [self = shared_from_this(), index](Result<http::Response> r) {
        Feed& f = self->feeds_[index];
        f.discovery_in_flight = false;
        if (self->stopped_) return;
        Result<KvSource> s =
            !r.ok() ? Result<KvSource>(r.status())
            : r->status != 200
                ? Result<KvSource>(Status(ErrorCode::kUnavailable,
                                          "/kv_event_sources: status " + std::to_string(r->status)))
                : ParseKvEventSources(r->body,
                                      self->ctx_->endpoints[f.endpoint_index].address.host);
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
  sink.on_events = [ctx, id](bool clear, std::vector<kv::EventBatch> batches) {
    boost::asio::post(ctx->executor, [ctx, id, clear, batches = std::move(batches)] {
      if (clear) ctx->router.ClearKvEvents(id);
      for (const auto& b : batches) ctx->router.OnKvEvents(id, b);
    });
  };
  sink.on_state = [ctx, id](bool live, const std::string& reason) {
    boost::asio::post(ctx->executor, [ctx, id, live, reason] {
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
