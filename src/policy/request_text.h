// RequestScanText: the text that taggers scan and an external classifier receives — every
// string value of the client's request body as received, so that PII anywhere in the
// request (tool-call arguments, tool descriptions, `user`, `suffix`, completion prompt
// arrays, Anthropic tool_use inputs, documents, metadata...) is seen, not only the
// rendered prompt used for routing.
//
// Rules: the JSON is walked depth-first; every string value and every object key is
// emitted (keys carry data too: a tool schema property or a logit_bias token id can be
// the personal data); integers, and other numbers whose value is integral, are emitted as
// decimal text (a card number sent as a JSON number, even 4.111111111111111e15, is still
// a card number); an inline text document ({"type":"base64","media_type":"text/...",
// "data":...}) is emitted decoded; booleans and null are skipped. Items are separated by
// "\n" so that a pattern never spans two of them.
//
// ScanRequest also returns, for the pii tagger's split-value check (policy/pii.h), the
// spans of the values a person writes (string values and numbers, in document order; not
// keys, and not the values of the schema's structural fields `role`, `type`, `media_type`,
// `detail`, `format`, `id`, `tool_call_id`, `tool_use_id`), so that one message's content
// and the next one's are neighbours; and the kinds of content no tagger can read (images,
// audio, files, token ids, embeddings): OpenAI content parts `image_url`, `input_image`,
// `input_audio`, `file`, `input_file`; Anthropic `image`, `container_upload`, and
// `document` blocks whose source is not text (base64 other than text/*, `url`, `file`);
// a top-level completions `prompt` of token ids ("tokens": integers, or arrays holding
// numbers) and a top-level `prompt_embeds` that is not null ("embeddings", vLLM).
//
// Header values that go upstream with the body (on /v1/messages: anthropic-version and
// anthropic-beta, which the gateway passes to Anthropic providers) are appended to the
// scan text with AppendScanText, one item each, after the body's items.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/pii.h"

namespace kinference::policy {

struct RequestScan {
  std::string text;              // what RequestScanText returns
  std::vector<TextSpan> values;  // spans of `text` (see above), document order
  // The same spans grouped by the `role` of the message they are in (an object with a
  // string `role`: chat and Messages turns), one group per role, each in document order,
  // so that the pii tagger also joins a role's consecutive turns (a card split across
  // two user turns with an assistant turn between them). Values outside any message are
  // in no group.
  std::vector<std::vector<TextSpan>> role_values;
  // "audio", "embeddings", "file", "image", "tokens": sorted, no duplicates
  std::vector<std::string> unscannable;
};

// The scan of `body` (see above). A raw body that does not parse is one value, scanned as
// it is.
RequestScan ScanRequest(const boost::json::value& body);
RequestScan ScanRequest(const boost::json::object& body);  // no copy of the body
RequestScan ScanRequest(std::string_view raw_json);

// Every key, string and integral number of `body` (see above), "\n"-separated.
std::string RequestScanText(const boost::json::value& body);
std::string RequestScanText(const boost::json::object& body);  // no copy of the body

// As above for a raw JSON body; a body that does not parse is scanned as it is (it is the
// text the client sent).
std::string RequestScanText(std::string_view raw_json);

// Appends `item` to `scan_text` as one more item ("\n"-separated; nothing when empty).
void AppendScanText(std::string& scan_text, std::string_view item);

}  // namespace kinference::policy
