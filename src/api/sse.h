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

// One event as the parser saw it, without copies: the views point into the parser and
// are valid only during the callback.
struct SseEventView {
  std::string_view event;  // empty when the event had no `event:` field
  std::string_view data;   // data lines joined with \n
  // The event's bytes as received, from its first field line to the blank line that ended
  // it, when they are exactly FormatSse(data, event) ("event: E\n" when E is not empty,
  // one "data: " line per line of data, "\n"); empty otherwise (CRLF line ends, a comment
  // or id line inside the event, "data:" without its space, an empty event name...).
  // Relaying these bytes is relaying FormatSse(data, event) without building it.
  std::string_view formatted;
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
  // The same events as views (no copy of an event with one data line; see SseEventView).
  // The oversized event's replacement has an empty `formatted`.
  void FeedViews(std::string_view bytes, const std::function<void(const SseEventView&)>& on_event);
  // Bytes counted toward kMaxEventBytes for the incomplete event: its pending line plus
  // its data lines gathered so far (a \n each). The parser may hold more: the lines of an
  // event framed as FormatSse frames it, up to kMaxKeptEventBytes, for `formatted`.
  size_t buffered() const;
  bool failed() const { return failed_; }

  // The most bytes of an event's lines kept for its SseEventView::formatted (a token's
  // chunk is well under 1 KiB): a larger event is copied out like any other (its
  // `formatted` is empty), so memory stays what kMaxEventBytes allows plus this.
  static constexpr size_t kMaxKeptEventBytes = 1u << 20;

 private:
  // The current event stops being kept in buffer_: its fields are copied to event_ and
  // joined_ (a line that FormatSse would not write was met, or it grew too large).
  void Own();

  // Kept (kept_): the current event's lines from its first field line on, then the bytes
  // not processed yet. Otherwise only the bytes not processed yet (comment and ignored
  // lines before an event's first field are never kept).
  std::string buffer_;
  size_t line_ = 0;         // start of the first line not processed yet
  size_t scanned_ = 0;      // buffer_[line_, scanned_) holds no '\n': not searched again
  bool kept_ = true;        // the current event's lines are in buffer_, its fields views into it
  bool has_field_ = false;  // a data or event line was seen in the current event
  size_t data_lines_ = 0;
  // Kept: the fields as offsets into buffer_ (data_: the first data line's value).
  size_t event_at_ = 0, event_size_ = 0;
  size_t data_at_ = 0, data_size_ = 0;
  std::string event_;   // not kept: the event name
  std::string joined_;  // the data when not kept, or kept with several data lines, joined
  bool failed_ = false;
};

// "data: <data>\n\n", or "event: <event>\ndata: <data>\n\n" when event is not empty.
std::string FormatSse(std::string_view data, std::string_view event = {});

}  // namespace kinference::api
