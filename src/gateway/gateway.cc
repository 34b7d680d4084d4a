#include "gateway/gateway.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string_view>
#include <system_error>

#include "api/anthropic/messages_request.h"
#include "api/openai/error.h"
#include "common/build_info.h"
#include "gateway/context.h"
#include "gateway/exchange/policy_gate.h"
#include "gateway/exchange/proxy.h"
#include "gateway/front/messages.h"
#include "gateway/front/usage.h"
#include "gateway/kubernetes/source.h"
#include "gateway/memory_trim.h"
#include "gateway/stats/endpoints_debug.h"
#include "gateway/upstream/kv_feeds.h"
#include "gateway/upstream/scraper.h"
#include "http/server.h"

namespace kinference::gateway {
namespace json = boost::json;

namespace {

// /v1/messages and the paths under it (the Anthropic Messages API's front).
bool IsAnthropicPath(std::string_view path) {
  constexpr std::string_view kMessages = "/v1/messages";
  return path.starts_with(kMessages) &&
         (path.size() == kMessages.size() || path[kMessages.size()] == '/');
}

// 405 Method Not Allowed (RFC 9110 15.5.6) for a known path and a method it has no route
// for: `Allow` lists the path's methods; the body is in the path's API error shape
// (Anthropic's for /v1/messages, OpenAI's elsewhere, `code` 405 as for every OpenAI error
// body here, the HTTP status).
void SendMethodNotAllowed(const http::Request& r, const std::string& allow,
                          http::ResponseWriter& w) {
  const std::string message =
      "Method " + r.method + " is not allowed for " + r.path + "; allowed: " + allow + ".";
  http::Headers extra;
  extra.Add("Allow", allow);
  if (IsAnthropicPath(r.path)) {
    return w.Send(
        405, "application/json",
        api::anthropic::ErrorBody(api::anthropic::ErrorType(ErrorCode::kInvalidArgument), message),
        std::move(extra));
  }
  // OpenAiErrorBody's shape; 405 has no ErrorCode, so `code` is given.
  std::string body = api::OpenAiErrorBody(Status(ErrorCode::kInvalidArgument, message), 405);
  w.Send(405, "application/json", std::move(body), std::move(extra));
}

// A request body larger than this is read only once its header carries a valid key (with
// a `tenants` section): an unauthenticated client must not make the gateway buffer up to
// max_body_bytes per connection (measured: ten connections each sending 29 MiB of an
// unfinished body held 344 MB of the gateway's memory). 64 KiB is our choice: far above a
// typical chat body (a few KiB), which is still read first and refused after, with
// keep-alive and an access-log line, as before.
constexpr uint64_t kAuthBeforeBodyBytes = 64 * 1024;

// ServerOptions::header_check: refuses, before its body is read, a request to an API route
// whose body is large (Content-Length above kAuthBeforeBodyBytes, or chunked: size
// unknown) and whose header does not identify a tenant.
Status CheckKeyBeforeLargeBody(const GatewayContext& ctx, const http::Request& head) {
  if (!ctx.config.tenants.enabled || head.method != "POST") return Status::Ok();
  const bool anthropic = IsAnthropicPath(head.path);
  if (!anthropic && head.path != "/v1/chat/completions" && head.path != "/v1/completions")
    return Status::Ok();
  if (head.headers.Find("transfer-encoding").empty()) {
    uint64_t length = 0;
    std::string_view cl = head.headers.Find("content-length");
    auto [end, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), length);
    if (ec != std::errc() || length <= kAuthBeforeBodyBytes) return Status::Ok();
  }
  auto tenant = Identify(ctx.config.tenants, head.headers,
                         anthropic ? ApiFront::kAnthropic : ApiFront::kOpenAi);
  return tenant.ok() ? Status::Ok() : tenant.status();
}

// The ledger's folders (a SQLite file's, the spool's) must be writable before the gateway
// serves: else every usage record would be lost, or the first one would fail the process
// later. The usual cause is a relative sqlite_path resolved into a read-only config folder
// (a Kubernetes ConfigMap mount), hence the advice in the message.
Status CheckLedgerFolders(const accounting::LedgerConfig& ledger) {
  std::vector<std::pair<std::string, std::string>> folders;  // field, folder
  if (ledger.store == accounting::StoreKind::kSqlite) {
    std::string dir = std::filesystem::path(ledger.sqlite_path).parent_path().string();
    folders.emplace_back("accounting.ledger.sqlite_path", dir.empty() ? "." : dir);
  }
  if (ledger.store != accounting::StoreKind::kNone && !ledger.spool_dir.empty())
    folders.emplace_back("accounting.ledger.spool_dir", ledger.spool_dir);
  for (const auto& [field, dir] : folders) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string why = ec ? ec.message() : "";
    if (!ec && ::access(dir.c_str(), W_OK | X_OK) != 0)
      why = std::error_code(errno, std::generic_category()).message();
    if (!why.empty()) {
      return Status(ErrorCode::kInvalidArgument,
                    field + ": the folder '" + dir + "' cannot be written (" + why +
                        "); the ledger needs a writable folder that outlives the gateway "
                        "(Helm chart: gateway.persistence; several replicas: ledger.store "
                        "postgres)");
    }
  }
  return Status::Ok();
}

}  // namespace

Gateway::Gateway(boost::asio::io_context& io, GatewayConfig config)
    : io_(io), ctx_(std::make_shared<GatewayContext>(std::move(config), io.get_executor())) {}

Gateway::~Gateway() { Stop(); }

void Gateway::UseKubernetes(std::shared_ptr<k8s::RestClient> client, std::string ns) {
  k8s_client_ = std::move(client);
  k8s_namespace_ = std::move(ns);
}

Result<uint16_t> Gateway::Start() {
  if (ctx_->accounting) {
    if (Status s = CheckLedgerFolders(ctx_->config.accounting.ledger); !s.ok()) return s;
    // The ledger's spool and store (an unreachable store is not fatal: records wait in
    // the spool); local limits load today's and this month's spend from the ledger.
    if (Status s = ctx_->accounting->Start(); !s.ok()) {
      return Status(ErrorCode::kUnavailable, "accounting: " + s.message());
    }
  }
  http::ServerOptions options;
  options.address = ctx_->config.listen_address;
  options.port = ctx_->config.listen_port;
  options.max_body_bytes = ctx_->config.max_body_bytes;
  options.max_buffered_body_bytes = EffectiveMaxBufferedBodyBytes(ctx_->config);
  options.max_connections = ctx_->config.max_connections;
  // A streaming client's kernel send buffer holds at most about client_buffer_bytes (the
  // kernel doubles the half asked for), so that a client that stops reading is paused
  // (and cut after client_stall_timeout_s) within about twice client_buffer_bytes of it.
  options.stream_send_buffer_bytes = ctx_->config.backpressure.client_buffer_bytes / 2;
  // The server's own errors (413, malformed HTTP 400, 503 while draining or with no room
  // for a body) in the shape and status of the path's API: Anthropic's under /v1/messages
  // (overload, kUnavailable, is 529 overloaded_error there), OpenAI's elsewhere.
  options.error_body = [](std::string_view path, const Status& status, int http_status) {
    return IsAnthropicPath(path) ? api::anthropic::ErrorBody(status)
                                 : api::OpenAiErrorBody(status, http_status);
  };
  options.error_status = [](std::string_view path, const Status& status) {
    return IsAnthropicPath(path) ? api::anthropic::ErrorHttpStatus(status.code())
                                 : HttpStatusFor(status.code());
  };
  // ... and with the request id a client can quote (its own x-request-id, else a new one).
  options.error_headers = [ctx = ctx_](const http::Headers& request_headers) {
    http::Headers out;
    out.Add(kRequestIdHeader, RequestIdFor(*ctx, request_headers));
    return out;
  };
  options.header_check = [ctx = ctx_](const http::Request& head) {
    return CheckKeyBeforeLargeBody(*ctx, head);
  };
  options.header_timeout_s = ctx_->config.server_timeouts.header_s;
  options.keep_alive_timeout_s = ctx_->config.server_timeouts.keep_alive_s;
  options.body_timeout_s = ctx_->config.server_timeouts.body_s;
  options.tls_cert_file = ctx_->config.tls.cert_file;
  options.tls_key_file = ctx_->config.tls.key_file;
  options.tls_client_ca_file = ctx_->config.tls.client_ca_file;
  options.tls_reload_interval_s = ctx_->config.tls.reload_interval_s;
  options.on_tls_reload = [](const Status& st) {
    if (st.ok()) {
      spdlog::info("gateway: TLS certificate files changed; new connections use them");
    } else {
      spdlog::warn(
          "gateway: TLS files changed but did not load ({}); still serving the previous "
          "certificate",
          st.message());
    }
  };
  server_ = std::make_unique<http::Server>(io_, options);
  // admin_listen (config.h): /metrics, /health, /ready and /debug/* on a listener of their
  // own, plain HTTP, no body, the server's default error shape.
  if (const auto& admin = ctx_->config.admin_listen) {
    http::ServerOptions admin_options;
    admin_options.address = admin->address;
    admin_options.port = admin->port;
    admin_options.max_body_bytes = 64 * 1024;  // no admin route takes a body
    admin_options.max_connections = 64;        // scrapers and probes; our choice
    admin_options.header_timeout_s = ctx_->config.server_timeouts.header_s;
    admin_options.keep_alive_timeout_s = ctx_->config.server_timeouts.keep_alive_s;
    admin_options.body_timeout_s = ctx_->config.server_timeouts.body_s;
    admin_server_ = std::make_unique<http::Server>(io_, admin_options);
  }
  auto ctx = ctx_;
  kv_feeds_ = std::make_shared<KvFeeds>(ctx_);
  // Every route goes through `route`, which also records the path's methods for 405
  // (a GET route serves HEAD too: http::Server answers it without the body).
  std::map<std::string, std::string> allowed;  // path -> "GET, HEAD"
  auto route = [&](std::string method, std::string path, http::Handler handler) {
    std::string& allow = allowed[path];
    allow += (allow.empty() ? "" : ", ") + method + (method == "GET" ? ", HEAD" : "");
    server_->Route(std::move(method), std::move(path), std::move(handler));
  };
  // The admin routes: on the admin listener when there is one (/health and /ready on both:
  // load balancers probe the traffic port), else on the API listener.
  auto admin_route = [&](std::string method, std::string path, http::Handler handler,
                         bool also_on_api) {
    if (!admin_server_) return route(std::move(method), std::move(path), std::move(handler));
    if (also_on_api) route(method, path, handler);
    admin_server_->Route(std::move(method), std::move(path), std::move(handler));
  };
  route("POST", "/v1/chat/completions", [ctx](http::Request r, auto w) {
    HandleCompletion(ctx, api::ApiKind::kChatCompletions, std::move(r), std::move(w));
  });
  route("POST", "/v1/completions", [ctx](http::Request r, auto w) {
    HandleCompletion(ctx, api::ApiKind::kCompletions, std::move(r), std::move(w));
  });
  route("POST", "/v1/messages",
        [ctx](http::Request r, auto w) { HandleMessages(ctx, std::move(r), std::move(w)); });
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  route("GET", "/v1/models", [ctx, created](http::Request r, auto w) {
    auto tenant = Identify(ctx->config.tenants, r.headers, ApiFront::kOpenAi);
    if (!tenant.ok()) return http::SendOpenAiError(*w, tenant.status());
    json::array data;
    for (const auto& m : ctx->Models()) {
      data.push_back(json::object{
          {"id", m}, {"object", "model"}, {"created", created}, {"owned_by", "kinference"}});
    }
    w->Send(200, "application/json",
            json::serialize(json::object{{"object", "list"}, {"data", std::move(data)}}));
  });
  // Liveness: the gateway's io thread answers. Readiness: some model has a healthy
  // endpoint (not ejected, breaker closed); per model below.
  admin_route(
      "GET", "/health",
      [](http::Request, auto w) {
        w->Send(200, "application/json", json::serialize(json::object{{"status", "ok"}}));
      },
      true);
  admin_route(
      "GET", "/ready",
      [ctx](http::Request, auto w) {
        ctx->RefreshBreakers();
        json::object models;
        for (const auto& m : ctx->Models()) {
          int healthy = 0, total = 0;
          for (const auto& ep : ctx->endpoints) {
            if (ep.info.model != m) continue;
            ++total;
            healthy += ep.healthy ? 1 : 0;
          }
          models[m] = json::object{{"healthy_endpoints", healthy}, {"endpoints", total}};
        }
        const bool ready = !ctx->ServableModels().empty();
        w->Send(ready ? 200 : 503, "application/json",
                json::serialize(json::object{{"status", ready ? "ready" : "unavailable"},
                                             {"models", std::move(models)}}));
      },
      true);
  admin_route(
      "GET", "/metrics",
      [ctx, feeds = kv_feeds_](http::Request, auto w) {
        feeds->UpdateStats(ctx->stats);
        ctx->RefreshBreakers();
        const auto& ac = ctx->admission.controller();
        for (const auto& pool : ac.Pools()) {
          admission::PoolStats ps = ac.Stats(pool);
          ctx->stats.SetAdmission(pool, ps.waiting, ps.queued_total, ps.refused_queue_full_total,
                                  ps.refused_timeout_total, ps.evicted_total);
        }
        if (ctx->accounting) UpdateLedgerStats(*ctx);
        w->Send(200, "text/plain; version=0.0.4; charset=utf-8",
                ctx->stats.Exposition() + BuildInfoExposition());
      },
      false);
  // GET /v1/usage (front/usage.h): 503 without an accounting section.
  route("GET", "/v1/usage", [ctx](http::Request r, auto w) { ServeUsage(ctx, r, std::move(w)); });
  admin_route(
      "GET", "/debug/decisions", [ctx](http::Request r, auto w) { ServeDecisions(*ctx, r, *w); },
      false);
  admin_route(
      "GET", "/debug/endpoints", [ctx](http::Request r, auto w) { ServeEndpoints(*ctx, r, *w); },
      false);
  // No route for the method and path: 405 on a known path, else 404: Anthropic's shape
  // for /v1/messages and paths under it (e.g. /v1/messages/count_tokens, which the
  // Anthropic SDK calls), OpenAI's elsewhere (what http::Server answers without a fallback).
  server_->SetFallback([allowed = std::move(allowed)](http::Request r, auto w) {
    if (auto it = allowed.find(r.path); it != allowed.end()) {
      return SendMethodNotAllowed(r, it->second, *w);
    }
    const Status not_found(ErrorCode::kNotFound, "Not found: " + r.method + " " + r.path);
    if (IsAnthropicPath(r.path)) {
      return w->Send(api::anthropic::ErrorHttpStatus(not_found.code()), "application/json",
                     api::anthropic::ErrorBody(not_found));
    }
    http::SendOpenAiError(*w, not_found);
  });
  if (admin_server_) {
    auto admin_port = admin_server_->Start();
    if (!admin_port.ok())
      return Status(admin_port.status().code(), "admin_listen: " + admin_port.status().message());
    admin_port_ = *admin_port;
  }
  auto port = server_->Start();
  if (!port.ok()) return port;
  MemoryTrimHooks trim_hooks;
  trim_hooks.active_requests = [this] { return ActiveRequests(); };
  trimmer_ = std::make_shared<MemoryTrimmer>(io_.get_executor(), std::move(trim_hooks));
  trimmer_->Start();
  scraper_ = std::make_shared<Scraper>(ctx_);
  scraper_->Start();
  kv_feeds_->Start();  // before the cluster's endpoints arrive: it follows them
  if (k8s_client_) {
    k8s_source_ = std::make_shared<KubernetesSource>(ctx_, k8s_client_, k8s_namespace_);
    k8s_source_->Start();
  } else {
    reloader_ = std::make_shared<PolicyReloader>(ctx_);
    reloader_->Start();
  }
  return port;
}

void Gateway::Drain(double grace_s, std::function<void()> done) {
  if (draining_) {  // a second request (signal): stop at once
    if (done) drain_done_ = std::move(done);
    aborted_ = true;
    return FinishDrain();
  }
  draining_ = true;
  drain_done_ = std::move(done);
  if (server_) server_->StopAccepting();
  spdlog::info("gateway: draining {} in-flight request(s), grace {} s", ActiveRequests(), grace_s);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(std::max(0.0, grace_s)));
  drain_timer_ = std::make_unique<boost::asio::steady_timer>(io_);
  PollDrain(deadline);
}

// Checks every kDrainPoll whether in-flight requests are done; polling keeps the HTTP
// server free of completion callbacks (20 ms is our choice: far below any grace period).
void Gateway::PollDrain(std::chrono::steady_clock::time_point deadline) {
  constexpr auto kDrainPoll = std::chrono::milliseconds(20);
  if (ActiveRequests() == 0 || std::chrono::steady_clock::now() >= deadline) {
    return FinishDrain();
  }
  drain_timer_->expires_after(kDrainPoll);
  drain_timer_->async_wait([this, deadline](const boost::system::error_code& ec) {
    if (!ec) PollDrain(deadline);
  });
}

void Gateway::FinishDrain() {
  size_t left = ActiveRequests();
  if (left > 0 && !aborted_) {
    // Grace over: end what is left with an error (streams get the SSE error event) and
    // give those last bytes up to kAbortFlush to reach the clients before closing.
    constexpr auto kAbortFlush = std::chrono::seconds(1);  // our choice; loopback/LAN
    aborted_ = true;
    size_t n = AbortInFlight(
        *ctx_, Status(ErrorCode::kUnavailable, "The gateway is shutting down (drain timeout)."));
    spdlog::warn("gateway: drain grace over; aborted {} request(s)", n);
    return PollDrain(std::chrono::steady_clock::now() + kAbortFlush);
  }
  if (left > 0) spdlog::warn("gateway: closing {} connection(s) still busy", left);
  auto done = std::move(drain_done_);
  Stop();  // clears drain_done_
  if (done) done();
}

size_t Gateway::ActiveRequests() const { return server_ ? server_->ActiveRequests() : 0; }

Status Gateway::ReloadPolicies() {
  if (k8s_client_) {
    spdlog::info(
        "gateway: policies come from InferencePolicy objects (--kubernetes); no files to reload");
    return Status::Ok();
  }
  return gateway::ReloadPolicies(*ctx_, false);
}

void Gateway::Stop() {
  if (drain_timer_) drain_timer_->cancel();
  drain_done_ = nullptr;
  if (trimmer_) trimmer_->Stop();
  if (scraper_) scraper_->Stop();
  ctx_->admission.Stop();
  if (reloader_) reloader_->Stop();
  if (k8s_source_) k8s_source_->Stop();
  if (kv_feeds_) kv_feeds_->Stop();
  if (server_) server_->Stop();
  if (admin_server_) admin_server_->Stop();
  // After the server: the records of requests ended by the stop are submitted first,
  // then every queued record is written or spooled (a graceful stop loses nothing).
  if (ctx_->accounting) ctx_->accounting->Stop();
}

}  // namespace kinference::gateway
