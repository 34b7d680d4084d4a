#include "gateway/front/usage.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <chrono>
#include <map>
#include <string>

#include "accounting/usage_query.h"
#include "api/openai/error.h"
#include "gateway/front/tenants.h"

namespace kinference::gateway {

void ServeUsage(const std::shared_ptr<GatewayContext>& ctx, const http::Request& request,
                std::shared_ptr<http::ResponseWriter> writer) {
  auto fail = [&](const Status& s) { http::SendOpenAiError(*writer, s); };
  bool admin = true;
  std::string caller = kDefaultTenant;
  if (ctx->config.tenants.enabled) {
    // Anonymous access is no identity here: the rows name tenants and what they spent.
    TenantsConfig identified = ctx->config.tenants;
    identified.anonymous_tenant.clear();
    auto tenant = Identify(identified, request.headers, ApiFront::kOpenAi);
    if (!tenant.ok()) return fail(tenant.status());
    caller = *tenant;
    admin = ctx->accounting && ctx->accounting->config().admin_tenants.count(caller) > 0;
  }
  if (!ctx->accounting) {
    return fail(Status(ErrorCode::kUnavailable,
                       "Usage is not available: this gateway's configuration has no `accounting` "
                       "section, so no usage is recorded (docs/accounting.md)."));
  }
  std::map<std::string, std::string> params;
  auto url = boost::urls::parse_origin_form(request.target);
  if (!url) {
    return fail(Status(ErrorCode::kInvalidArgument, "The request target does not parse."));
  }
  for (const auto& p : url->params()) {
    if (params.count(p.key)) {
      Status s(ErrorCode::kInvalidArgument, "Parameter '" + p.key + "' is given twice.");
      s.WithParam(p.key);
      return fail(s);
    }
    params[p.key] = p.value;
  }
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto q = accounting::ParseUsageQuery(params, now);
  if (!q.ok()) return fail(q.status());
  if (!admin) {
    if (q->tenant && *q->tenant != caller) {
      Status s(ErrorCode::kPermissionDenied,
               "Tenant '" + caller + "' may read only its own usage.");
      s.WithParam("tenant");
      return fail(s);
    }
    q->tenant = caller;
  }
  const accounting::UsageQuery query = *q;
  ctx->accounting->Query(
      std::move(*q), [writer, query](Result<std::vector<accounting::UsageRow>> rows) {
        if (writer->closed()) return;
        if (!rows.ok()) return http::SendOpenAiError(*writer, rows.status());
        if (query.format == accounting::UsageFormat::kCsv) {
          return writer->Send(200, "text/csv; charset=utf-8", accounting::RenderCsv(query, *rows));
        }
        writer->Send(200, "application/json", accounting::RenderJson(query, *rows));
      });
}

void UpdateLedgerStats(GatewayContext& ctx) {
  if (!ctx.accounting) return;
  if (auto w = ctx.accounting->writer_stats()) {
    ctx.stats.SetLedger(LedgerSample{.written = w->written,
                                     .spooled = w->spooled,
                                     .replayed = w->replayed,
                                     .lost_queue_full = w->lost_queue_full,
                                     .lost_spool_full = w->lost_spool_full,
                                     .lost_spool_error = w->lost_spool_error,
                                     .lost_corrupt = w->lost_corrupt,
                                     .write_failures = w->write_failures,
                                     .queue_depth = w->queue_depth,
                                     .spool_records = w->spool_records,
                                     .spool_bytes = w->spool_bytes,
                                     .store_up = w->store_up});
  }
  if (auto r = ctx.accounting->redis_stats()) {
    ctx.stats.SetLimiter(LimiterSample{.checks = r->checks,
                                       .unavailable = r->unavailable,
                                       .settle_dropped = r->settle_dropped,
                                       .errors = r->errors,
                                       .up = r->up});
  }
}

}  // namespace kinference::gateway
