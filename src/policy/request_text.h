// RequestScanText: the text that taggers scan and an external classifier receives — every
// string value of the client's request body as received, so that PII anywhere in the
// request (tool-call arguments, tool descriptions, `user`, `suffix`, completion prompt
// arrays, Anthropic tool_use inputs, documents, metadata...) is seen, not only the
// rendered prompt used for routing.
//
// Rules: the JSON is walked depth-first in document order; every string value is
// emitted, object keys are not; integers are emitted as decimal text (a card number
// sent as a JSON number is still a card number); other numbers, booleans and null are
// skipped. Values are separated by "\n" so that a pattern never spans two values.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

namespace kinference::policy {

// Every string (and integer) value of `body`, "\n"-separated.
std::string RequestScanText(const boost::json::value& body);
std::string RequestScanText(const boost::json::object& body);  // no copy of the body

// As above for a raw JSON body; a body that does not parse is scanned as it is (it is the
// text the client sent).
std::string RequestScanText(std::string_view raw_json);

}  // namespace kinference::policy
