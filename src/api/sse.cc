// Server-sent events parser and formatter (WHATWG HTML, "Server-sent events",
// section "Interpreting an event stream").
#include "api/sse.h"

#include <algorithm>

namespace kinference::api {

namespace {

// Whether `raw` is exactly FormatSse(data, event).
bool IsFormatted(std::string_view raw, std::string_view data, std::string_view event) {
  auto take = [&raw](std::string_view s) {
    if (!raw.starts_with(s)) return false;
    raw.remove_prefix(s.size());
    return true;
  };
  if (!event.empty() && !(take("event: ") && take(event) && take("\n"))) return false;
  size_t start = 0;
  while (true) {
    size_t nl = data.find('\n', start);
    if (!(take("data: ") && take(data.substr(start, nl - start)) && take("\n"))) return false;
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return raw == "\n";
}

constexpr std::string_view kOversizedEvent =
    R"({"type":"error","error":{"type":"api_error","message":)"
    R"("upstream sent a stream event over 16 MiB"}})";

}  // namespace

void SseParser::Own() {
  if (!kept_) return;
  event_.assign(buffer_, event_at_, event_size_);
  if (data_lines_ == 1) joined_.assign(buffer_, data_at_, data_size_);
  kept_ = false;
}

size_t SseParser::buffered() const {
  // As counted when every event was copied out: the pending line, and each data line's
  // value with a \n.
  const size_t data = kept_ && data_lines_ == 1 ? data_size_ : joined_.size();
  return buffer_.size() - line_ + (data_lines_ == 0 ? 0 : data + 1);
}

void SseParser::FeedViews(std::string_view bytes,
                          const std::function<void(const SseEventView&)>& on_event) {
  if (failed_) return;
  buffer_.append(bytes);
  // Where the current event starts in buffer_ (kept_): 0 when it began in an earlier call
  // (or none began: line_ is 0 then), moved past the lines skipped before its first field.
  size_t event_begin = 0;
  size_t start = line_;
  while (true) {
    size_t nl = buffer_.find('\n', std::max(start, scanned_));
    if (nl == std::string::npos) break;
    const size_t line_at = start;
    std::string_view line(buffer_.data() + start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      // Blank line: dispatch. An event with no data lines is dropped (WHATWG).
      if (data_lines_ > 0) {
        SseEventView ev;
        if (kept_) {
          ev.event = std::string_view(buffer_.data() + event_at_, event_size_);
          ev.data = data_lines_ == 1 ? std::string_view(buffer_.data() + data_at_, data_size_)
                                     : std::string_view(joined_);
          std::string_view raw(buffer_.data() + event_begin, start - event_begin);
          if (IsFormatted(raw, ev.data, ev.event)) ev.formatted = raw;
        } else {
          ev.event = event_;
          ev.data = joined_;
        }
        on_event(ev);
      }
      kept_ = true;
      has_field_ = false;
      data_lines_ = event_at_ = event_size_ = data_at_ = data_size_ = 0;
      event_.clear();
      joined_.clear();
      event_begin = start;
      continue;
    }
    if (line.front() == ':') {  // comment
      if (has_field_) {
        Own();  // not FormatSse's framing; not kept, like the old copy-out
      } else {
        event_begin = start;
      }
      continue;
    }
    std::string_view field = line, value;
    if (size_t colon = line.find(':'); colon != std::string_view::npos) {
      field = line.substr(0, colon);
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    const size_t value_at = value.empty() ? line_at : value.data() - buffer_.data();
    if (field == "data") {
      if (!kept_) {
        if (data_lines_ > 0) joined_.push_back('\n');
        joined_.append(value);
      } else if (data_lines_ == 0) {
        data_at_ = value_at;
        data_size_ = value.size();
      } else {
        if (data_lines_ == 1) joined_.assign(buffer_, data_at_, data_size_);
        joined_.push_back('\n');
        joined_.append(value);
      }
      ++data_lines_;
      has_field_ = true;
    } else if (field == "event") {
      if (has_field_) Own();  // FormatSse writes one event line, first; the last one counts
      if (kept_) {
        event_at_ = value_at;
        event_size_ = value.size();
      } else {
        event_.assign(value);
      }
      has_field_ = true;
    } else if (has_field_) {
      Own();  // `id`, `retry` and unknown fields are ignored
    } else {
      event_begin = start;
    }
  }
  if (kept_ && has_field_ && start - event_begin > kMaxKeptEventBytes) Own();
  // Keep the current event's lines while kept_ (offsets move with them), else only the
  // bytes not processed yet.
  const size_t keep = kept_ ? event_begin : start;
  buffer_.erase(0, keep);
  if (kept_) {
    event_at_ = event_size_ == 0 ? 0 : event_at_ - keep;
    data_at_ = data_size_ == 0 ? 0 : data_at_ - keep;
  }
  line_ = start - keep;
  scanned_ = buffer_.size();
  if (buffered() > kMaxEventBytes) {
    failed_ = true;
    buffer_ = std::string();
    event_ = std::string();
    joined_ = std::string();
    line_ = scanned_ = 0;
    data_lines_ = 0;
    on_event(SseEventView{"error", kOversizedEvent, {}});
  }
}

void SseParser::Feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) {
  FeedViews(bytes, [&on_event](const SseEventView& ev) {
    on_event(SseEvent{std::string(ev.event), std::string(ev.data)});
  });
}

std::string FormatSse(std::string_view data, std::string_view event) {
  std::string out;
  out.reserve(data.size() + event.size() + 16);
  if (!event.empty()) {
    out.append("event: ").append(event).append("\n");
  }
  // A data value with line breaks becomes several `data:` lines (joined back by parsers).
  size_t start = 0;
  while (true) {
    size_t nl = data.find('\n', start);
    out.append("data: ").append(data.substr(start, nl - start)).append("\n");
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out.append("\n");
  return out;
}

}  // namespace kinference::api
