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
  for (auto& ep : ctx_->endpoints) {
    if (!ep.provider) ScrapeOne(ep);  // providers have no /metrics
  }
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(ctx_->config.RealSeconds(ctx_->config.scrape_interval_s))));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->Tick();
  });
}

void Scraper::ScrapeOne(Endpoint& ep) {
  if (ep.scrape_in_flight) return;
  ep.scrape_in_flight = true;
  http::ClientRequest req;
  req.method = "GET";
  req.host = ep.address.host;
  req.port = ep.address.port;
  req.target = "/metrics";
  req.content_type.clear();
  // A pool's key (vllm serve --api-key): sent on scrapes too, for vLLM versions that guard
  // /metrics with it; ignored by those that do not.
  if (!ep.api_key.empty()) req.headers.Add("authorization", "Bearer " + ep.api_key);
  double limit = std::max(1.0, ctx_->config.RealSeconds(ctx_->config.scrape_interval_s));
  req.connect_timeout_s = limit;
  req.header_timeout_s = limit;
  req.idle_timeout_s = limit;
  http::Fetch(
      ctx_->executor, std::move(req),
      [self = shared_from_this(), id = ep.info.id, serial = ep.serial](Result<http::Response> r) {
        Endpoint* ep = self->ctx_->FindMutable(id);
        // Removed meanwhile, or removed and added again (its own scrape runs).
        if (ep == nullptr || ep->serial != serial) return;
        ep->scrape_in_flight = false;
        if (self->stopped_) return;
        if (!r.ok()) {
          // "connect HOST:PORT: ..." (http/client.cc) without a timeout: nothing
          // listens there (refused, unreachable).
          bool refused = r.status().code() == ErrorCode::kUnavailable &&
                         r.status().message().starts_with("connect ");
          return self->Record(id, false, r.status().message(), refused);
        }
        if (r->status != 200) return self->Record(id, false, "status " + std::to_string(r->status));
        auto snap = routing::ParsePrometheusText(r->body);
        if (!snap.ok()) return self->Record(id, false, snap.status().message());
        ep->last_metrics = *snap;
        ep->last_metrics_at = self->ctx_->clock.Now();
        self->ctx_->router.ObserveMetrics(id, *snap, self->ctx_->clock.Now());
        if (snap->num_requests_running) {
          self->ctx_->admission.controller().ObserveMetrics(id, *snap->num_requests_running,
                                                            snap->num_requests_waiting.value_or(0));
          self->ctx_->admission.Pump();  // a derived limit may have risen
        }
        self->Record(id, true, "");
      });
}

void Scraper::Record(const std::string& id, bool ok, const std::string& why, bool refused) {
  Endpoint* found = ctx_->FindMutable(id);
  if (found == nullptr) return;
  Endpoint& ep = *found;
  if (ok) {
    ep.consecutive_failures = 0;
    if (ep.metrics_stale) {
      spdlog::info("endpoint {}: metrics fresh again", ep.info.id);
      ep.metrics_stale = false;
      ctx_->stats.SetMetricsStale(ep.info.id, false);
    }
    return;
  }
  ++ep.consecutive_failures;
  spdlog::debug("scrape of {} failed: {}", ep.info.id, why);
  if (!ep.metrics_stale) {
    spdlog::warn(
        "endpoint {}: metrics stale (scrape failed: {}); routing on the gateway's own "
        "bookkeeping",
        ep.info.id, why);
    ep.metrics_stale = true;
    ctx_->stats.SetMetricsStale(ep.info.id, true);
  }
  if (refused) ctx_->OnRequestResult(id, routing::RequestResult::kConnectFailure);
}

}  // namespace kinference::gateway
