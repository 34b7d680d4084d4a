// OpenAI request parsing, the one parse of a /v1/chat/completions or /v1/completions body
// (api/openai/request.h) and what the gateway derives from it: validation, the upstream
// bodies (plain and streamed) and the Anthropic provider's translation. Any bytes give a
// ParsedRequest or kInvalidArgument / kNotFound; every body the gateway would send
// upstream is one JSON object.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/anthropic/upstream_request.h"
#include "api/openai/request.h"
#include "api/openai/stream_assembler.h"
#include "api/openai/validate.h"
#include "fuzz_util.h"

using namespace kinference;
using kinference::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  api::ApiKind kind = (data[0] & 1) ? api::ApiKind::kCompletions : api::ApiKind::kChatCompletions;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  (void)api::CheckJsonContentType(body.substr(0, 80));
  auto parsed = api::ParseRequest(kind, body);
  if (!parsed.ok()) {
    auto code = parsed.status().code();
    Check(code == ErrorCode::kInvalidArgument || code == ErrorCode::kNotFound);
    return 0;
  }
  Status valid = api::ValidateOpenAiFields(kind, parsed->body);
  Check(valid.ok() || valid.code() == ErrorCode::kInvalidArgument);
  Check(fuzz::MustParseJson(api::UpstreamBody(*parsed)).is_object());
  Check(fuzz::MustParseJson(api::UpstreamBody(*parsed, "provider-model")).is_object());
  if (api::StreamsFaithfully(kind, parsed->body)) {
    auto streamed = fuzz::MustParseJson(api::StreamedUpstreamBody(*parsed, "m"));
    Check(streamed.is_object() && streamed.as_object().at("stream") == true);
  }
  if (kind == api::ApiKind::kChatCompletions) {
    (void)api::RenderWithReply(parsed->prompt_text, "reply");
    api::anthropic::UpstreamRequestOptions options{.model = "claude"};
    auto messages = api::anthropic::BuildMessagesRequest(parsed->body, options);
    if (messages.ok()) {
      Check(fuzz::MustParseJson(*messages).is_object());
    } else {
      Check(messages.status().code() == ErrorCode::kInvalidArgument);
    }
  }
  return 0;
}
