// RequestScanText: every key, string and integral number of a request body, so taggers
// see PII anywhere in it (tool arguments, descriptions, user, metadata, documents...).
#include "policy/request_text.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "policy/taggers.h"

namespace kinference::policy {
namespace {

bool HasPii(std::string_view body) { return !PiiTags(RequestScanText(body)).empty(); }

TEST(RequestScanText, KeysStringsAndIntegralNumbers) {
  EXPECT_EQ(
      RequestScanText(std::string_view(
          R"({"model":"m","bob@example.org":1,"a":[{"b":"x"},"y",true,null,1.5,2e3],"n":42})")),
      "model\nbob@example.org\na\nn\nm\n1\nb\nx\ny\n2000\n42");
  // The object overload (no copy of the body) gives the same text.
  auto v = boost::json::parse(R"({"k":{"v":"w"},"n":-7.0})");
  EXPECT_EQ(RequestScanText(v.as_object()), RequestScanText(v));
  EXPECT_EQ(RequestScanText(v), "k\nn\nv\nw\n-7");
  // Not JSON: scanned as sent.
  EXPECT_EQ(RequestScanText(std::string_view("not json")), "not json");
}

// Each of these fields, alone, carries PII that the routing rendering misses.
TEST(RequestScanText, PiiInEveryFieldOfChatCompletionsAndMessages) {
  const char* kBodies[] = {
      // chat: tool_calls arguments, tool description, prediction, response_format, user,
      // name, refusal.
      R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{\"to\":\"bob@example.org\"}"}}]}]})",
      R"({"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","description":"mail alice@example.com"}}]})",
      R"({"model":"m","messages":[],"prediction":{"type":"content","content":"card 4111 1111 1111 1111"}})",
      R"({"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"description":"SSN 123-45-6789"}}}})",
      R"({"model":"m","messages":[],"user":"carol@example.net"})",
      R"({"model":"m","messages":[{"role":"user","name":"dave@example.org","content":"hi"}]})",
      R"({"model":"m","messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"no, eve@example.org"}]}]})",
      // completions: later prompt elements, suffix.
      R"({"model":"m","prompt":["hello","frank@example.org"]})",
      R"({"model":"m","prompt":"hello","suffix":"gina@example.org"})",
      // Anthropic: tool_use input, document, search_result, tool description, metadata.
      R"({"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"email":"h@example.org"}}]}]})",
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"write to kim@example.org"}}]}]})",
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"ivan@example.org"}]}]}]})",
      R"({"model":"m","messages":[],"tools":[{"name":"f","description":"call +44 20 7946 0958","input_schema":{}}]})",
      R"({"model":"m","messages":[],"metadata":{"user_id":"judy@example.org"}})",
      // A card number sent as a JSON number.
      R"({"model":"m","messages":[],"metadata":{"account":4111111111111111}})",
      // ... or as a float; and PII in object keys (a tool schema property, logit_bias).
      R"({"model":"m","messages":[],"temperature":4.111111111111111e15})",
      R"({"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"bob@example.com":{}}}}}]})",
      R"({"model":"m","messages":[],"logit_bias":{"4111111111111111":1}})",
      // An inline base64 text document ("bob@example.com SSN 123-45-6789").
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"text/plain","data":"Ym9iQGV4YW1wbGUuY29tIFNTTiAxMjMtNDUtNjc4OQ=="}}]}]})",
  };
  for (const char* body : kBodies) EXPECT_TRUE(HasPii(body)) << body;
  EXPECT_FALSE(HasPii(R"({"model":"m","messages":[{"role":"user","content":"hello"}]})"));
}

}  // namespace
}  // namespace kinference::policy
