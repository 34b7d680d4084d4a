// GET /v1/usage: the usage ledger's aggregates over HTTP (accounting/usage_query.h has the
// parameters, the row columns and the JSON and CSV shapes; `kinference usage` answers the
// same queries on the command line). Without an `accounting` section in the config it
// answers 503 saying so (after the key check below), so that an operator who forgot the
// section learns why, instead of a 404 that looks like a wrong path.
//
// Who sees what: with a `tenants` section the caller must present a tenant's key (no
// anonymous access: rows name tenants and their spend); a tenant listed in
// accounting.usage_api.admin_tenants reads every tenant's usage (and may narrow it with
// `tenant`), any other tenant only its own (`tenant` naming another one is 403). Without a
// `tenants` section every caller is tenant "default", which reads everything, as for
// /debug/decisions.
//
// Errors, in OpenAI's shape with the matching status: 401 (no or wrong key), 403 (another
// tenant's usage), 400 (a parameter that does not parse, the message names it; or an
// answer over accounting::kMaxUsageRows rows: narrow it), 429 (too many queries waiting),
// 503 (no accounting section; no ledger: accounting.ledger.store none, or the store is
// unreachable).
//
// Thread-safety: runs on the gateway's io_context thread; the query runs on the query
// service's thread and answers through the io_context.
#pragma once

#include <memory>

#include "gateway/context.h"
#include "http/server.h"

namespace kinference::gateway {

void ServeUsage(const std::shared_ptr<GatewayContext>& ctx, const http::Request& request,
                std::shared_ptr<http::ResponseWriter> writer);

// Copies the ledger writer's and the shared limiter's counters into ctx.stats (/metrics).
void UpdateLedgerStats(GatewayContext& ctx);

}  // namespace kinference::gateway
