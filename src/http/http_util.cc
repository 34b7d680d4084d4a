// Shared pieces of the HTTP library: header lookup, the OpenAI error response, framing.
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/status.hpp>
#include <cstdio>

#include "api/openai/error.h"
#include "http/server.h"
#include "http/wire.h"

namespace kinference::http {

std::string_view Headers::Find(std::string_view name) const {
  for (const auto& [k, v] : items) {
    if (boost::beast::iequals(k, name)) return v;
  }
  return {};
}

void SendOpenAiError(ResponseWriter& w, const Status& status) {
  w.Send(HttpStatusFor(status.code()), "application/json", api::OpenAiErrorBody(status));
}

namespace {
bool Clean(std::string_view s) { return s.find_first_of("\r\n") == std::string_view::npos; }
}  // namespace

std::string FormatHead(int status, std::string_view content_type, const Headers& extra,
                       bool keep_alive, BodyFraming framing, size_t content_length) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
  out.append(boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status)));
  out.append("\r\n");
  if (!content_type.empty() && Clean(content_type)) {
    out.append("Content-Type: ").append(content_type).append("\r\n");
  }
  for (const auto& [k, v] : extra.items) {
    if (k.empty() || !Clean(k) || !Clean(v)) continue;
    out.append(k).append(": ").append(v).append("\r\n");
  }
  switch (framing) {
    case BodyFraming::kContentLength:
      out.append("Content-Length: ").append(std::to_string(content_length)).append("\r\n");
      break;
    case BodyFraming::kChunked:
      out.append("Transfer-Encoding: chunked\r\n");
      break;
    case BodyFraming::kUntilClose:
      break;
  }
  if (!keep_alive) out.append("Connection: close\r\n");
  out.append("\r\n");
  return out;
}

std::string FormatChunk(std::string_view data) {
  char size[24];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out;
  out.reserve(n + data.size() + 2);
  out.append(size, n).append(data).append("\r\n");
  return out;
}

}  // namespace kinference::http
