// Server-sent events parser and formatter (WHATWG HTML, "Server-sent events",
// section "Interpreting an event stream").
#include "api/sse.h"

#include <algorithm>

namespace kinference::api {

void SseParser::Feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) {
  if (failed_) return;
  buffer_.append(bytes);
  size_t start = 0;
  while (true) {
    size_t nl = buffer_.find('\n', std::max(start, scanned_));
    if (nl == std::string::npos) break;
    std::string_view line(buffer_.data() + start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      // Blank line: dispatch. An event with no data lines is dropped (WHATWG).
      if (has_data_) {
        if (!current_.data.empty() && current_.data.back() == '\n') current_.data.pop_back();
        on_event(current_);
      }
      current_ = SseEvent{};
      has_data_ = false;
      continue;
    }
    if (line.front() == ':') continue;  // comment
    std::string_view field = line, value;
    if (size_t colon = line.find(':'); colon != std::string_view::npos) {
      field = line.substr(0, colon);
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      current_.data.append(value);
      current_.data.push_back('\n');
      has_data_ = true;
    } else if (field == "event") {
      current_.event.assign(value);
    }
    // `id` and `retry` are not used by our streams and are ignored.
  }
  buffer_.erase(0, start);
  scanned_ = buffer_.size();
  if (buffer_.size() + current_.data.size() > kMaxEventBytes) {
    failed_ = true;
    buffer_ = std::string();
    current_ = SseEvent{};
    on_event(SseEvent{"error", R"({"type":"error","error":{"type":"api_error","message":)"
                               R"("upstream sent a stream event over 16 MiB"}})"});
  }
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
