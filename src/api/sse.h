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
  // An event (its pending line plus the data lines gathered so far) larger than this is
  // refused: memory per stream stays bounded whatever an upstream sends. A token's chunk
  // is well under 1 KiB; 16 MiB leaves room for huge logprobs or tool-call arguments.
  static constexpr size_t kMaxEventBytes = 16u << 20;

  // Feeds bytes; calls `on_event` for every event completed by them. An event over
  // kMaxEventBytes is dropped and replaced by one `event: error` whose data is
  // {"type":"error","error":{"type":"api_error","message":...}} (Anthropic's error event;
  // its top-level "error" object is what OpenAI-shaped readers look for too); the
  // parser is then failed() and ignores what follows.
  void Feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);
  // Bytes held for an incomplete event.
  size_t buffered() const { return buffer_.size() + current_.data.size(); }
  bool failed() const { return failed_; }

 private:
  std::string buffer_;
  size_t scanned_ = 0;  // buffer_[0, scanned_) holds no '\n': not searched again
  SseEvent current_;
  bool has_data_ = false;
  bool failed_ = false;
};

// "data: <data>\n\n", or "event: <event>\ndata: <data>\n\n" when event is not empty.
std::string FormatSse(std::string_view data, std::string_view event = {});

}  // namespace kinference::api
