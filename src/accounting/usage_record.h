// UsageRecord: the ledger's one row per request that reached an upstream (success, error
// or cancelled, with what it used), and its JSON form (the on-disk spool's line format
// and the unit of `kinference usage --raw`).
//
// Fields and units:
//   record_id        32 lowercase hex digits, unique per record: stores insert it once
//                    (a batch re-sent after a lost acknowledgement is not counted twice)
//   time_ms          Unix time in ms (UTC) when the request arrived at the gateway
//   request_id       the request's x-request-id
//   tenant, front    who sent it; "openai" (/v1/chat/completions, /v1/completions) or
//                    "anthropic" (/v1/messages)
//   requested_model  the client's `model`; served_model what the upstream ran (a policy
//                    may switch it)
//   provider         pool name (local vLLM) or provider name; endpoint the endpoint id
//                    ("<pool>/<index>", "provider/<name>")
//   tokens           TokenCounts (prices.h); usage_estimated: the upstream sent no usage
//                    and the counts are the gateway's estimate
//   ttft_ms          time to first token, ms (-1: no token arrived); e2e_ms arrival to end
//   outcome          "success", "error" or "cancelled"; status the HTTP status sent
//   policy_decision  x-kinference-decision as sent ("" when no policy applied)
//   cost_nano_usd    Cost() at the matching price; priced false when no price matched
//   gateway          the gateway instance that wrote it (host:pid)
//
// Thread-safety: plain data; pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "accounting/money.h"
#include "accounting/prices.h"
#include "common/status.h"

namespace kinference::accounting {

struct UsageRecord {
  std::string record_id;
  int64_t time_ms = 0;
  std::string request_id;
  std::string tenant;
  std::string front;
  std::string requested_model;
  std::string served_model;
  std::string provider;
  std::string endpoint;
  TokenCounts tokens;
  bool usage_estimated = false;
  double ttft_ms = -1;
  double e2e_ms = 0;
  std::string outcome;
  int status = 0;
  std::string policy_decision;
  NanoUsd cost_nano_usd = 0;
  bool priced = false;
  std::string gateway;

  bool operator==(const UsageRecord&) const = default;
};

// One line of JSON (no newline).
std::string ToJsonLine(const UsageRecord& record);
// Parses ToJsonLine's output. kInvalidArgument for anything else (e.g. a line cut short
// by a crash).
Result<UsageRecord> FromJsonLine(std::string_view line);

// 32 lowercase hex digits of the two 64-bit halves (callers draw them from a random
// source; the library has none).
std::string MakeRecordId(uint64_t high, uint64_t low);

}  // namespace kinference::accounting
