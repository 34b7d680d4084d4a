// OpenAI responses as the gateway reads them back from upstream: token usage, what one
// streamed chunk carries, and the reply text of a whole chat completion.
//
// Shapes: OpenAI API reference "The chat completion object", "The chat completion chunk
// object", "Completions" (and vLLM's protocol.py, which serves the same fields).
// Units: tokens.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kinference::api {

// An OpenAI `usage` object.
struct Usage {
  int prompt_tokens = 0;
  int cached_tokens = 0;  // prompt_tokens_details.cached_tokens
  int completion_tokens = 0;
};

// usage.{prompt_tokens, prompt_tokens_details.cached_tokens, completion_tokens} of a
// response or chunk object (absent counts are 0); nullopt when `usage` is absent or null,
// and when it cannot be right: a count that is not an integer in 0..2^31-1, or more
// cached than prompt tokens (an upstream's bug must not make the gateway's token counters
// go down or jump by 2^40: such usage is not counted; docs/reliability.md, wrong usage).
std::optional<Usage> ParseUsage(const boost::json::object& response);

// One upstream SSE event's data, parsed once for every stage that reads it (InspectChunk,
// StreamAssembler::Add). `value` is null for "[DONE]" and for data that is not JSON.
// `sp` is where its nodes live: a stack buffer's monotonic_resource makes a chunk cost
// no heap allocation (the caller keeps the resource alive while it reads the chunk).
struct StreamChunk {
  bool done = false;
  boost::json::value value;
};
StreamChunk ParseStreamChunk(std::string_view data, boost::json::storage_ptr sp = {});

// What one upstream SSE event's data holds.
struct ChunkInfo {
  bool done = false;         // the `[DONE]` sentinel
  bool parsed = false;       // data was a JSON object
  bool has_content = false;  // a choice carries non-empty content/text/tool calls
  bool usage_only = false;   // the final usage chunk: empty choices, a usage object (valid or not)
  std::optional<Usage> usage;
  std::string content;  // delta.content of choice 0 (a chat chunk's reply text)
};
ChunkInfo InspectChunk(const StreamChunk& chunk);
ChunkInfo InspectChunk(std::string_view data);  // ParseStreamChunk, then the above

// InspectChunk(data) in one pass over the text, without building the parsed value (a
// streamed token's chunk costs no tree of nodes): the same ChunkInfo, or nullopt when
// the data needs the parsed value: a top-level `usage` object (the final usage chunk,
// validated by ParseUsage), a key InspectChunk reads given twice in one object (the
// parsed value keeps the last), data that is not one JSON object, or nesting deeper than
// choices[].delta.tool_calls[] allows to follow. Callers then use InspectChunk.
std::optional<ChunkInfo> ScanStreamChunk(std::string_view data);

// choices[0].message.content of a whole chat.completion response; empty when absent.
std::string ReplyContent(const boost::json::object& response);

}  // namespace kinference::api
