// Scraper: polls GET /metrics of every local endpoint (those there at each tick: Kubernetes
// mode adds and removes them) every scrape_interval_s (model
// seconds, i.e. scrape_interval_s / time_scale real seconds), parses it
// (routing::ParsePrometheusText) and hands the snapshot to the router with the time it arrived
// (router clock) and its running/waiting counts to admission control (derived limits). A
// failed scrape (timeout, non-200, unparsable text) only marks the endpoint's metrics stale
// (kinference_endpoint_metrics_stale; the router's decisions show the metrics' age and it
// predicts from its own in-flight bookkeeping); the endpoint stays routable. A scrape whose
// connection is refused is a connect failure for passive health (context.h): vLLM serves
// /metrics on its API port, so the endpoint is ejected. At most one scrape per endpoint is
// in flight; each is bounded by the real scrape interval (at least 1 real second).
//
// Thread-safety: runs on the gateway's io_context thread only.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "gateway/context.h"

namespace kinference::gateway {

class Scraper : public std::enable_shared_from_this<Scraper> {
 public:
  explicit Scraper(std::shared_ptr<GatewayContext> ctx);
  // Scrapes every endpoint now, then every interval.
  void Start();
  void Stop();

 private:
  void Tick();
  void ScrapeOne(Endpoint& ep);
  // The endpoint may be gone by the time its scrape answers: looked up by id, then ignored.
  void Record(const std::string& id, bool ok, const std::string& why, bool refused = false);

  std::shared_ptr<GatewayContext> ctx_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;
};

}  // namespace kinference::gateway
