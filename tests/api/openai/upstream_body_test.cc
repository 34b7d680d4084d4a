// The bodies sent upstream: serialised from the parsed request without copying it, with
// a provider's model name and the stream fields set as assigning them would.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "api/openai/request.h"
#include "api/openai/stream_assembler.h"

namespace kinference::api {
namespace {

namespace json = boost::json;

ParsedRequest Parse(const std::string& body) {
  auto r = ParseRequest(ApiKind::kChatCompletions, body);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(*r) : ParsedRequest{};
}

TEST(UpstreamBody, ProviderModelReplacesTheModelInPlace) {
  ParsedRequest r = Parse(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n":1})");
  EXPECT_EQ(UpstreamBody(r, "gpt-x"),
            R"({"model":"gpt-x","messages":[{"role":"user","content":"hi"}],"n":1})");
  EXPECT_EQ(UpstreamBody(r), json::serialize(r.body));
}

TEST(UpstreamBody, StreamingKeepsTheClientsStreamOptionsAndForcesUsage) {
  ParsedRequest r = Parse(
      R"({"model":"m","stream":true,"stream_options":{"continuous_usage_stats":true},"messages":[]})");
  EXPECT_EQ(UpstreamBody(r, "p"),
            R"({"model":"p","stream":true,"stream_options":{"continuous_usage_stats":true,)"
            R"("include_usage":true},"messages":[]})");
  ParsedRequest plain = Parse(R"({"model":"m","stream":true,"messages":[]})");
  EXPECT_EQ(UpstreamBody(plain),
            R"({"model":"m","stream":true,"messages":[],"stream_options":{"include_usage":true}})");
}

TEST(StreamedUpstreamBody, StreamFieldsAndProviderModel) {
  ParsedRequest r = Parse(R"({"model":"m","stream":false,"messages":[]})");
  EXPECT_EQ(StreamedUpstreamBody(r),
            R"({"model":"m","stream":true,"messages":[],"stream_options":{"include_usage":true}})");
  EXPECT_EQ(StreamedUpstreamBody(r, "p"),
            R"({"model":"p","stream":true,"messages":[],"stream_options":{"include_usage":true}})");
}

TEST(ParseRequest, AParsedObjectReadsAsItsText) {
  const std::string body =
      R"({"model":"m","stream":true,"max_tokens":7,"messages":[{"role":"user","content":"x"}]})";
  auto from_text = ParseRequest(ApiKind::kChatCompletions, body);
  auto from_object = ParseRequest(ApiKind::kChatCompletions, json::parse(body).as_object());
  ASSERT_TRUE(from_text.ok());
  ASSERT_TRUE(from_object.ok());
  EXPECT_EQ(from_object->model, from_text->model);
  EXPECT_EQ(from_object->stream, from_text->stream);
  EXPECT_EQ(from_object->max_tokens, 7);
  EXPECT_EQ(from_object->prompt_text, from_text->prompt_text);
  EXPECT_EQ(from_object->body, from_text->body);
  EXPECT_TRUE(from_object->original.is_null());
}

}  // namespace
}  // namespace kinference::api
