// Anthropic response translation both ways (the first input byte picks one, the second
// the upstream status):
//  0: an OpenAI upstream's whole response -> an Anthropic message (TranslateResponse);
//  1: an OpenAI upstream's SSE stream -> Anthropic's event stream (StreamTranslator);
//  2: an Anthropic provider's whole message -> an OpenAI chat completion
//     (MessagesResponseToOpenAi);
//  3: an Anthropic provider's event stream -> OpenAI chunks (MessagesStreamDecoder).
// Whatever upstream sent, the client gets JSON (every SSE event's data included, "[DONE]"
// aside) with an HTTP status, and a stream ends at most once.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/anthropic/messages_response.h"
#include "api/anthropic/upstream_response.h"
#include "fuzz_util.h"

using namespace kinference;
using kinference::fuzz::Check;

namespace {

constexpr int kStatuses[] = {200, 200, 200, 400, 401, 404, 413, 429, 500, 502, 503, 529};

void CheckEvents(std::string_view sse) {
  for (const auto& e : fuzz::SseEvents(sse)) {
    if (e.data != "[DONE]") Check(fuzz::MustParseJson(e.data).is_object());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  int mode = data[0] % 4;
  int status = kStatuses[data[1] % (sizeof(kStatuses) / sizeof(kStatuses[0]))];
  std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  api::anthropic::ResponseContext ctx{.model = "m", .stop_sequences = {"END", "\n\n"}};
  switch (mode) {
    case 0: {
      auto r = api::anthropic::TranslateResponse(status, text, ctx);
      Check(r.status >= 200 && r.status <= 599);
      Check(fuzz::MustParseJson(r.body).is_object());
      break;
    }
    case 1: {
      api::anthropic::StreamTranslator t(ctx);
      std::string out;
      for (const auto& e : fuzz::InputEvents(text)) out += t.OnData(e.data);
      bool done = t.done();
      std::string end = t.OnEnd();
      if (done) Check(end.empty());
      out += end;
      Check(t.done());
      CheckEvents(out);
      break;
    }
    case 2: {
      auto r = api::anthropic::MessagesResponseToOpenAi(status, text, 1700000000);
      Check(r.status >= 200 && r.status <= 599);
      Check(fuzz::MustParseJson(r.body).is_object());
      break;
    }
    default: {
      api::anthropic::MessagesStreamDecoder d(1700000000);
      std::string out;
      for (const auto& e : fuzz::InputEvents(text)) {
        for (const auto& o : d.OnEvent(e)) out += api::FormatSse(o.data, o.event);
      }
      for (const auto& o : d.OnEnd()) out += api::FormatSse(o.data, o.event);
      CheckEvents(out);
      break;
    }
  }
  return 0;
}
