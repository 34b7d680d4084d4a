// The stream assembler (api/openai/stream_assembler.h): an upstream SSE stream (the input,
// chat or completions by its first byte) rebuilt into one response. Whatever the chunks,
// Finish gives either kUnavailable or one JSON object of the API's shape; nothing throws.
#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/openai/stream_assembler.h"
#include "fuzz_util.h"

using namespace kinference;
using kinference::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  api::ApiKind kind = (data[0] & 1) ? api::ApiKind::kCompletions : api::ApiKind::kChatCompletions;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  api::StreamAssembler assembler(kind);
  for (const auto& e : fuzz::InputEvents(text)) assembler.Add(e.data);
  auto body = assembler.Finish();
  if (!body.ok()) {
    Check(body.status().code() == ErrorCode::kUnavailable);
    return 0;
  }
  Check(!assembler.failed());
  boost::json::value v = fuzz::MustParseJson(*body);
  Check(v.is_object());
  const auto& o = v.as_object();
  const char* object =
      kind == api::ApiKind::kChatCompletions ? "chat.completion" : "text_completion";
  Check(o.contains("object") && o.at("object").is_string() && o.at("object").as_string() == object);
  Check(o.contains("choices") && o.at("choices").is_array() && !o.at("choices").as_array().empty());
  return 0;
}
