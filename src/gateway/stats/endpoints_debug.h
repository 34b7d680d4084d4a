// GET /debug/endpoints: each endpoint as the gateway sees it, for operators and tests:
// id, pool, model, class ("local" | "provider"), URL, health, consecutive scrape failures,
// and the last /metrics snapshot the router was given (routing/metrics_snapshot.h) with
// its age in model seconds (null before the first successful scrape; providers are never
// scraped). Snapshot fields keep the parser's names and units: counters as scraped,
// kv_cache_usage_perc a fraction 0..1 (vLLM's "1 means 100 percent"), block_size in tokens
// from vllm:cache_config_info; a series the scrape did not carry is null.
//
// Admission control's view too: "in_flight" (requests dispatched and not finished) and
// "max_in_flight" (the endpoint's current limit, admission/admission.h: 0 none). And the
// router's cooldown (routing/router.h): "cooling_down" while the endpoint is skipped
// because it answered 429/503/529 with a Retry-After, "cooldown_remaining_s" the model
// seconds until it may be picked again (0 when not cooling down).
//
// Shape: {"endpoints": [{"id", "pool", "model", "class", "url", "healthy",
//   "consecutive_failures", "in_flight", "max_in_flight", "cooling_down",
//   "cooldown_remaining_s", "metrics_age_s", "metrics": {...} | null}, ...]}.
// Access: open without tenants; with tenants, only debug_admin_tenants (403 otherwise,
// 401 without a valid key), since it names the upstream URLs.
//
// Thread-safety: call on the gateway's io thread (reads GatewayContext).
#pragma once

#include <boost/json.hpp>

#include "gateway/context.h"
#include "http/server.h"

namespace kinference::gateway {

boost::json::object EndpointsJson(const GatewayContext& ctx);

void ServeEndpoints(const GatewayContext& ctx, const http::Request& request,
                    http::ResponseWriter& writer);

}  // namespace kinference::gateway
