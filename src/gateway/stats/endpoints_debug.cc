#include "gateway/stats/endpoints_debug.h"

#include <algorithm>
#include <optional>

#include "gateway/front/tenants.h"

namespace kinference::gateway {
namespace json = boost::json;
namespace {

json::value Opt(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value Opt(const std::optional<int>& v) { return v ? json::value(*v) : json::value(nullptr); }

json::object SnapshotJson(const routing::MetricsSnapshot& m) {
  return json::object{
      {"num_requests_running", Opt(m.num_requests_running)},
      {"num_requests_waiting", Opt(m.num_requests_waiting)},
      {"kv_cache_usage_perc", Opt(m.kv_cache_usage_perc)},
      {"prefix_cache_queries_total", Opt(m.prefix_cache_queries_total)},
      {"prefix_cache_hits_total", Opt(m.prefix_cache_hits_total)},
      {"prompt_tokens_total", Opt(m.prompt_tokens_total)},
      {"generation_tokens_total", Opt(m.generation_tokens_total)},
      {"num_preemptions_total", Opt(m.num_preemptions_total)},
      {"ttft_seconds_sum", Opt(m.ttft_seconds_sum)},
      {"ttft_seconds_count", Opt(m.ttft_seconds_count)},
      {"block_size", Opt(m.block_size)},
      {"num_gpu_blocks", Opt(m.num_gpu_blocks)},
  };
}

}  // namespace

json::object EndpointsJson(const GatewayContext& ctx) {
  const Seconds now = ctx.clock.Now();
  json::array out;
  for (const auto& ep : ctx.endpoints) {
    json::object o{
        {"id", ep.info.id},
        {"pool", ep.info.pool},
        {"model", ep.info.model},
        {"class", ep.endpoint_class()},
        {"url", ep.address.url},
        {"healthy", ep.healthy},
        {"consecutive_failures", ep.consecutive_failures},
        {"in_flight", ctx.admission.controller().InFlight(ep.info.id)},
        {"max_in_flight", ctx.admission.controller().Limit(ep.info.id)},
    };
    // Cooldown (routing/router.h): model seconds until it may be picked again.
    const auto cooling = ctx.router.CoolingUntil(ep.info.id, now);
    o["cooling_down"] = cooling.has_value();
    o["cooldown_remaining_s"] = cooling ? *cooling - now : 0.0;
    o["metrics_age_s"] =
        ep.last_metrics_at ? json::value(now - *ep.last_metrics_at) : json::value(nullptr);
    o["metrics"] = ep.last_metrics ? json::value(SnapshotJson(*ep.last_metrics)) : nullptr;
    out.push_back(std::move(o));
  }
  return json::object{{"endpoints", std::move(out)}};
}

void ServeEndpoints(const GatewayContext& ctx, const http::Request& request,
                    http::ResponseWriter& writer) {
  const TenantsConfig& tenants = ctx.config.tenants;
  if (tenants.enabled) {
    TenantsConfig identified = tenants;
    identified.anonymous_tenant.clear();
    auto tenant = Identify(identified, request.headers, ApiFront::kOpenAi);
    if (!tenant.ok()) return http::SendOpenAiError(writer, tenant.status());
    const auto& admins = ctx.config.policies.debug_admin_tenants;
    if (std::find(admins.begin(), admins.end(), *tenant) == admins.end()) {
      return http::SendOpenAiError(
          writer, Status(ErrorCode::kPermissionDenied,
                         "/debug/endpoints is for the tenants in policies.debug_admin_tenants"));
    }
  }
  writer.Send(200, "application/json", json::serialize(EndpointsJson(ctx)));
}

}  // namespace kinference::gateway
