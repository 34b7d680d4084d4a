#include "enginesim/anthropic_api.h"

#include "api/anthropic/messages_request.h"

namespace kinference::enginesim {

namespace anthropic = api::anthropic;

Status CheckAnthropicHeaders(const http::Headers& headers, const std::string& required_key) {
  if (headers.Find("anthropic-version").empty())
    return Status(ErrorCode::kInvalidArgument, "anthropic-version: header is required");
  if (required_key.empty()) return Status::Ok();
  std::string_view key = headers.Find("x-api-key");
  // The anthropic Python SDK 2.x sends its api_key as a bearer token (anthropic/_client.py,
  // _api_key_auth); Anthropic's API takes both.
  std::string_view auth = headers.Find("authorization");
  if (key.empty() && auth.starts_with("Bearer ")) key = auth.substr(7);
  if (key.empty()) return Status(ErrorCode::kUnauthenticated, "x-api-key header is required");
  // A test tool's key: a plain comparison (no timing-attack concern on loopback tests).
  if (key != required_key) return Status(ErrorCode::kUnauthenticated, "invalid x-api-key");
  return Status::Ok();
}

Result<MessagesCall> ParseMessagesCall(std::string_view body) {
  auto t = anthropic::TranslateRequest(body);
  if (!t.ok()) return t.status();
  MessagesCall call;
  call.chat_body = std::move(t->openai_body);
  call.stream = t->stream;
  call.response = anthropic::ResponseContext{t->model, std::move(t->stop_sequences)};
  return call;
}

int AnthropicErrorStatus(const Status& status) { return anthropic::ErrorHttpStatus(status.code()); }

std::string AnthropicErrorBody(const Status& status) { return anthropic::ErrorBody(status); }

}  // namespace kinference::enginesim
