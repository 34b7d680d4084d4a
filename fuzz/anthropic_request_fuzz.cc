// Anthropic Messages requests (/v1/messages) into the gateway: ParseMessages (the front's
// one parse and its OpenAI translation, api/anthropic/messages_request.h), then the
// translation back for an Anthropic provider (api/anthropic/upstream_request.h) and the
// native passthrough body. Errors are kInvalidArgument; every body sent on is one JSON
// object; error bodies are Anthropic's shape.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/anthropic/messages_request.h"
#include "api/anthropic/upstream_request.h"
#include "api/openai/validate.h"
#include "fuzz_util.h"

using namespace kinference;
using kinference::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto translated = api::anthropic::TranslateRequest(body);
  if (!translated.ok()) Check(translated.status().code() == ErrorCode::kInvalidArgument);

  auto parsed = api::anthropic::ParseMessages(body);
  if (!parsed.ok()) {
    Check(parsed.status().code() == ErrorCode::kInvalidArgument ||
          parsed.status().code() == ErrorCode::kNotFound);
    auto err = fuzz::MustParseJson(api::anthropic::ErrorBody(parsed.status()));
    Check(err.is_object() && err.as_object().at("type") == "error");
    return 0;
  }
  const api::ParsedRequest& req = parsed->request;
  auto native = api::anthropic::NativeRequestBody(req.original, "claude-native");
  if (native.ok()) Check(fuzz::MustParseJson(*native).is_object());
  if (!parsed->untranslatable.ok()) return 0;
  (void)api::ValidateOpenAiFields(api::ApiKind::kChatCompletions, req.body);
  api::anthropic::UpstreamRequestOptions options{.model = "claude"};
  auto back = api::anthropic::BuildMessagesRequest(req.body, options);
  if (back.ok()) {
    Check(fuzz::MustParseJson(*back).is_object());
  } else {
    Check(back.status().code() == ErrorCode::kInvalidArgument);
  }
  return 0;
}
