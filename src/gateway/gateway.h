// Gateway: the `kinference gateway` shell. An OpenAI-compatible HTTP front that routes
// each completion request to the vLLM endpoint the routing core picks (see exchange/proxy.h),
// scrapes endpoints' /metrics (upstream/scraper.h) and exports its own stats (stats/stats.h).
//
// Routes: POST /v1/chat/completions, POST /v1/completions, POST /v1/messages (Anthropic
// Messages API, translated to a chat completion; see front/messages.h), GET /v1/models
// (configured models, OpenAI list shape), GET /health (200 with the healthy endpoint count; 503
// when none is healthy), GET /metrics (Prometheus text), GET /debug/decisions (recent
// policy decisions as JSON; docs/policy.md). HEAD works wherever GET does (no body);
// another method on a known path gets 405 with `Allow`; other paths 404, in Anthropic's
// error shape under /v1/messages/, OpenAI's elsewhere.
//
// Graceful drain (Drain; SIGTERM/SIGINT in cli.cc, for Kubernetes rolling updates): new
// connections are refused at once, in-flight requests finish, new requests on kept-alive
// connections get 503; when none remain the gateway stops and calls `done`. After the
// grace period what is left is ended with an error (streams: the SSE error event; see
// AbortInFlight in exchange/proxy.h), given up to 1 s to flush, then closed.
//
// Thread-safety: construct, Start, Drain and Stop on the thread that runs the io_context;
// the gateway runs everything on that one thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <optional>

#include "common/status.h"
#include "gateway/config/config.h"

namespace kinference::http {
class Server;
}
namespace kinference::k8s {
class RestClient;
}

namespace kinference::gateway {

struct GatewayContext;
class Scraper;
class PolicyReloader;
class KvFeeds;
class KubernetesSource;
class MemoryTrimmer;

class Gateway {
 public:
  // Throws ConfigError for an unknown strategy.
  Gateway(boost::asio::io_context& io, GatewayConfig config);
  ~Gateway();
  // Kubernetes mode (gateway/kubernetes/source.h): pools, providers, tenants and policies
  // also come from namespace `ns` through `client`, applied live; the policy files are not
  // reloaded then. Call before Start.
  void UseKubernetes(std::shared_ptr<k8s::RestClient> client, std::string ns);
  // Binds, starts serving and scraping (and watching, in Kubernetes mode); returns the
  // bound port. Errors: kUnavailable; kInvalidArgument when the ledger's folders cannot be
  // written (accounting.ledger.sqlite_path / spool_dir, named in the message).
  Result<uint16_t> Start();
  // The admin listener's bound port (config admin_listen) after Start; none without one.
  std::optional<uint16_t> AdminPort() const { return admin_port_; }
  // Starts a graceful drain (see above); `grace_s` is real seconds (<= 0: stop at once).
  // `done` runs once, on the io_context thread, after the gateway has stopped. A second
  // call, or Stop(), ends the drain early (Stop: without calling `done`).
  void Drain(double grace_s, std::function<void()> done);
  // Requests in flight (dispatched, response not finished).
  size_t ActiveRequests() const;
  // Reloads the policy files now (SIGHUP); an invalid set is logged and the last valid
  // one stays (returned error). Reads files: call on the io_context thread, not per request.
  // Kubernetes mode: nothing to reload (Ok).
  Status ReloadPolicies();
  void Stop();

 private:
  boost::asio::io_context& io_;
  std::shared_ptr<GatewayContext> ctx_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::Server> admin_server_;  // admin_listen; null without it
  std::optional<uint16_t> admin_port_;
  std::shared_ptr<Scraper> scraper_;
  std::shared_ptr<PolicyReloader> reloader_;
  std::shared_ptr<KvFeeds> kv_feeds_;  // pools with kv_events (upstream/kv_feeds.h)
  std::shared_ptr<k8s::RestClient> k8s_client_;
  std::string k8s_namespace_;
  std::shared_ptr<KubernetesSource> k8s_source_;
  std::shared_ptr<MemoryTrimmer> trimmer_;  // heap back to the OS after a load (memory_trim.h)
  std::unique_ptr<boost::asio::steady_timer> drain_timer_;
  std::function<void()> drain_done_;
  bool draining_ = false;
  bool aborted_ = false;  // in-flight requests were ended after the grace period

  void PollDrain(std::chrono::steady_clock::time_point deadline);
  void FinishDrain();
};

}  // namespace kinference::gateway
