#include "gateway/upstream/scraper.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "http/client.h"
#include "routing/metrics_snapshot.h"

namespace kinference::gateway {

Scraper::Scraper(std::shared_ptr<GatewayContext> ctx)
    : ctx_(std::move(ctx)), timer_(ctx_->executor) {}

void Scraper::Start() {
  stopped_ = false;
  Tick();
}

void Scraper::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void Scraper::Tick() {
  if (stopped_) return;
  ctx_->RefreshBreakers();
  for (size_t i = 0; i < ctx_->endpoints.size(); ++i) {
    if (!ctx_->endpoints[i].provider) ScrapeOne(i);  // providers have no /metrics
  }
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(ctx_->config.RealSeconds(ctx_->config.scrape_interval_s))));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->Tick();
  });
}

void Scraper::ScrapeOne(size_t index) {
  Endpoint& ep = ctx_->endpoints[index];
  if (ep.scrape_in_flight) return;
  ep.scrape_in_flight = true;
  http::ClientRequest req;
  req.method = "GET";
  req.host = ep.address.host;
  req.port = ep.address.port;
  req.target = "/metrics";
  req.content_type.clear();
  double limit = std::max(1.0, ctx_->config.RealSeconds(ctx_->config.scrape_interval_s));
  req.connect_timeout_s = limit;
  req.header_timeout_s = limit;
  req.idle_timeout_s = limit;
  http::Fetch(ctx_->executor, std::move(req),
              [self = shared_from_this(), index](Result<http::Response> r) {
                Endpoint& ep = self->ctx_->endpoints[index];
                ep.scrape_in_flight = false;
                if (self->stopped_) return;
                if (!r.ok()) return self->Record(index, false, r.status().message());
                if (r->status != 200)
                  return self->Record(index, false, "status " + std::to_string(r->status));
                auto snap = routing::ParsePrometheusText(r->body);
                if (!snap.ok()) return self->Record(index, false, snap.status().message());
                self->ctx_->router.ObserveMetrics(ep.info.id, *snap, self->ctx_->clock.Now());
                ep.last_metrics = *snap;
                ep.last_metrics_at = self->ctx_->clock.Now();
                self->Record(index, true, "");
              });
}

void Scraper::Record(size_t index, bool ok, const std::string& why) {
  Endpoint& ep = ctx_->endpoints[index];
  if (ok) {
    ep.consecutive_failures = 0;
    if (!ep.healthy) {
      spdlog::info("endpoint {} healthy again", ep.info.id);
      ep.healthy = true;
      ctx_->router.SetHealthy(ep.info.id, true);
      ctx_->stats.SetEndpointHealthy(ep.info.id, true);
    }
    return;
  }
  ++ep.consecutive_failures;
  spdlog::debug("scrape of {} failed: {}", ep.info.id, why);
  if (ep.healthy && ep.consecutive_failures >= kUnhealthyAfterFailures) {
    spdlog::warn("endpoint {} unhealthy after {} failed scrapes ({})", ep.info.id,
                 ep.consecutive_failures, why);
    ep.healthy = false;
    ctx_->router.SetHealthy(ep.info.id, false);
    ctx_->stats.SetEndpointHealthy(ep.info.id, false);
  }
}

}  // namespace kinference::gateway
