// Internal to the HTTP library: raw HTTP/1.1 response framing (RFC 9112): the status
// line and header block, chunks of a chunked body, and the terminating zero chunk.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "http/server.h"

namespace kinference::http {

enum class BodyFraming {
  kContentLength,  // Content-Length: <length>
  kChunked,        // Transfer-Encoding: chunked
  kUntilClose,     // neither; the body ends when the connection closes (HTTP/1.0)
};

// Status line and headers, ending with the blank line. Header names or values holding
// CR or LF are dropped (no header injection). Adds Connection: close when !keep_alive.
std::string FormatHead(int status, std::string_view content_type, const Headers& extra,
                       bool keep_alive, BodyFraming framing, size_t content_length = 0);

// One chunk of a chunked body: hex size CRLF data CRLF. `data` must not be empty.
std::string FormatChunk(std::string_view data);

inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace kinference::http
