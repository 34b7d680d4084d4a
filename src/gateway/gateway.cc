#include "gateway/gateway.h"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>

#include "gateway/anthropic/handler.h"
#include "gateway/context.h"
#include "gateway/proxy.h"
#include "gateway/scraper.h"
#include "http/server.h"

namespace kinference::gateway {
namespace json = boost::json;

Gateway::Gateway(boost::asio::io_context& io, GatewayConfig config)
    : io_(io), ctx_(std::make_shared<GatewayContext>(std::move(config), io.get_executor())) {}

Gateway::~Gateway() { Stop(); }

Result<uint16_t> Gateway::Start() {
  http::ServerOptions options;
  options.address = ctx_->config.listen_address;
  options.port = ctx_->config.listen_port;
  options.max_body_bytes = ctx_->config.max_body_bytes;
  server_ = std::make_unique<http::Server>(io_, options);
  auto ctx = ctx_;
  server_->Route("POST", "/v1/chat/completions", [ctx](http::Request r, auto w) {
    HandleCompletion(ctx, ApiKind::kChatCompletions, std::move(r), std::move(w));
  });
  server_->Route("POST", "/v1/completions", [ctx](http::Request r, auto w) {
    HandleCompletion(ctx, ApiKind::kCompletions, std::move(r), std::move(w));
  });
  server_->Route("POST", "/v1/messages", [ctx](http::Request r, auto w) {
    anthropic::HandleMessages(ctx, std::move(r), std::move(w));
  });
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  server_->Route("GET", "/v1/models", [ctx, created](http::Request, auto w) {
    json::array data;
    for (const auto& m : ctx->Models()) {
      data.push_back(json::object{
          {"id", m}, {"object", "model"}, {"created", created}, {"owned_by", "kinference"}});
    }
    w->Send(200, "application/json",
            json::serialize(json::object{{"object", "list"}, {"data", std::move(data)}}));
  });
  server_->Route("GET", "/health", [ctx](http::Request, auto w) {
    int healthy = 0;
    for (const auto& ep : ctx->endpoints) healthy += ep.healthy ? 1 : 0;
    json::object body{{"status", healthy > 0 ? "ok" : "unavailable"},
                      {"healthy_endpoints", healthy},
                      {"endpoints", ctx->endpoints.size()}};
    w->Send(healthy > 0 ? 200 : 503, "application/json", json::serialize(body));
  });
  server_->Route("GET", "/metrics", [ctx](http::Request, auto w) {
    w->Send(200, "text/plain; version=0.0.4; charset=utf-8", ctx->stats.Exposition());
  });
  auto port = server_->Start();
  if (!port.ok()) return port;
  scraper_ = std::make_shared<Scraper>(ctx_);
  scraper_->Start();
  return port;
}

void Gateway::Stop() {
  if (scraper_) scraper_->Stop();
  if (server_) server_->Stop();
}

}  // namespace kinference::gateway
