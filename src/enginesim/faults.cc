#include "enginesim/faults.h"

#include <boost/json.hpp>
#include <string>

namespace kinference::enginesim {

Result<RequestFault> ParseRequestFault(std::string_view name) {
  if (name == "none") return RequestFault::kNone;
  if (name == "crash-mid-stream") return RequestFault::kCrashMidStream;
  if (name == "5xx") return RequestFault::kServerError;
  if (name == "reset") return RequestFault::kReset;
  if (name == "slow-first-byte") return RequestFault::kSlowFirstByte;
  if (name == "stall") return RequestFault::kStall;
  if (name == "wrong-usage") return RequestFault::kWrongUsage;
  return Status(ErrorCode::kInvalidArgument,
                "unknown fault '" + std::string(name) +
                    "' (none, crash-mid-stream, 5xx, reset, slow-first-byte, stall, wrong-usage)");
}

Result<MetricsFault> ParseMetricsFault(std::string_view name) {
  if (name == "none") return MetricsFault::kNone;
  if (name == "fail") return MetricsFault::kFail;
  if (name == "slow") return MetricsFault::kSlow;
  return Status(ErrorCode::kInvalidArgument,
                "unknown /metrics fault '" + std::string(name) + "' (none, fail, slow)");
}

std::string FaultServerErrorBody() {
  namespace json = boost::json;
  return json::serialize(
      json::object{{"object", "error"},
                   {"message", std::string("engine failed: upstream key ") + kFaultSecret +
                                   " rejected by " + kFaultAddress},
                   {"type", "InternalServerError"},
                   {"param", nullptr},
                   {"code", 500}});
}

std::string WithWrongUsage(std::string_view response_json) {
  namespace json = boost::json;
  json::error_code ec;
  json::value v = json::parse(response_json, ec);
  json::object* o = ec ? nullptr : v.if_object();
  json::value* u = o ? o->if_contains("usage") : nullptr;
  if (!u || !u->is_object()) return std::string(response_json);
  json::object& usage = u->get_object();
  constexpr int64_t kBeyondInt32 = int64_t{1} << 40;
  usage["prompt_tokens"] = kBeyondInt32;
  usage["completion_tokens"] = -7;
  usage["total_tokens"] = kBeyondInt32 - 7;
  usage["prompt_tokens_details"] = json::object{{"cached_tokens", kBeyondInt32 + 5}};
  return json::serialize(v);
}

}  // namespace kinference::enginesim
