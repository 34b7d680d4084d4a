// Gateway: the `kinference gateway` shell. An OpenAI-compatible HTTP front that routes
// each completion request to the vLLM endpoint the routing core picks (see proxy.h),
// scrapes endpoints' /metrics (scraper.h) and exports its own stats (stats.h).
//
// Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models (configured
// models, OpenAI list shape), GET /health (200 with the healthy endpoint count; 503 when
// none is healthy), GET /metrics (Prometheus text).
//
// Thread-safety: construct, Start and Stop on the thread that runs the io_context; the
// gateway runs everything on that one thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "common/status.h"
#include "gateway/config.h"

namespace kinference::http {
class Server;
}

namespace kinference::gateway {

struct GatewayContext;
class Scraper;

class Gateway {
 public:
  // Throws ConfigError for an unknown strategy.
  Gateway(boost::asio::io_context& io, GatewayConfig config);
  ~Gateway();
  // Binds, starts serving and scraping; returns the bound port. Errors: kUnavailable.
  Result<uint16_t> Start();
  void Stop();

 private:
  boost::asio::io_context& io_;
  std::shared_ptr<GatewayContext> ctx_;
  std::unique_ptr<http::Server> server_;
  std::shared_ptr<Scraper> scraper_;
};

}  // namespace kinference::gateway
