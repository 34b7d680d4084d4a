// SSE parsing (api/sse.h), as the gateway reads upstream streams: the events do not
// depend on where the bytes were split (the first input byte seeds the split points),
// the parser keeps no more than the incomplete tail, and FormatSse's output parses back
// to the event it formatted.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "api/sse.h"
#include "fuzz_util.h"

using kinference::api::SseEvent;
using kinference::api::SseParser;
using kinference::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint32_t seed = data[0] * 2654435761u + 1;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  std::vector<SseEvent> whole;
  SseParser one;
  one.Feed(text, [&](const SseEvent& e) { whole.push_back(e); });
  Check(one.buffered() <= text.size());

  std::vector<SseEvent> split;
  SseParser many;
  size_t pos = 0;
  while (pos < text.size()) {
    seed = seed * 1103515245u + 12345u;
    size_t n = 1 + (seed >> 16) % 17;
    if (n > text.size() - pos) n = text.size() - pos;
    many.Feed(text.substr(pos, n), [&](const SseEvent& e) { split.push_back(e); });
    pos += n;
  }
  Check(split.size() == whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    Check(split[i].event == whole[i].event && split[i].data == whole[i].data);
  }
  Check(many.buffered() == one.buffered());

  // Round trip: an event name without line breaks and data without '\r' come back as is.
  for (const auto& e : whole) {
    if (e.event.find_first_of("\r\n") != std::string::npos) continue;
    if (e.data.find('\r') != std::string::npos) continue;
    std::vector<SseEvent> back;
    SseParser p;
    p.Feed(kinference::api::FormatSse(e.data, e.event),
           [&](const SseEvent& b) { back.push_back(b); });
    Check(back.size() == 1 && back[0].data == e.data && back[0].event == e.event);
    Check(p.buffered() == 0);
  }
  return 0;
}
