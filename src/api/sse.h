// Server-sent events: an incremental parser (for upstream streams) and a formatter.
//
// Follows the WHATWG EventSource framing: lines ending in \n or \r\n, `event:` and
// `data:` fields (several data lines joined with \n), a blank line ends an event,
// lines starting with ':' are comments. Bytes may arrive split anywhere.
//
// Thread-safety: a parser belongs to one stream; not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace kinference::api {

struct SseEvent {
  std::string event;  // empty when the event had no `event:` field
  std::string data;
};

class SseParser {
 public:
  // Feeds bytes; calls `on_event` for every event completed by them.
  void Feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);
  // Bytes held for an incomplete event.
  size_t buffered() const { return buffer_.size(); }

 private:
  std::string buffer_;
  SseEvent current_;
  bool has_data_ = false;
};

// "data: <data>\n\n", or "event: <event>\ndata: <data>\n\n" when event is not empty.
std::string FormatSse(std::string_view data, std::string_view event = {});

}  // namespace kinference::api
