#include "api/openai/error.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace kinference::api {
namespace {

TEST(OpenAiErrorBody, Shape) {
  Status s(ErrorCode::kInvalidArgument, "bad \"x\"");
  s.WithParam("max_tokens");
  auto j = boost::json::parse(OpenAiErrorBody(s));
  const auto& e = j.at("error");
  EXPECT_EQ(e.at("message").as_string(), "bad \"x\"");
  EXPECT_EQ(e.at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(e.at("param").as_string(), "max_tokens");
  EXPECT_EQ(e.at("code").as_int64(), 400);
  auto k = boost::json::parse(OpenAiErrorBody(Status(ErrorCode::kNotFound, "no")));
  EXPECT_TRUE(k.at("error").at("param").is_null());
}

TEST(OpenAiErrorBody, CodeCanBeAnHttpStatusWithoutErrorCode) {
  auto j = boost::json::parse(OpenAiErrorBody(Status(ErrorCode::kInvalidArgument, "m"), 405));
  EXPECT_EQ(j.at("error").at("code").as_int64(), 405);
  EXPECT_EQ(j.at("error").at("type").as_string(), "invalid_request_error");
}

// An upstream error event mid-stream is replaced by the gateway's own, keeping the
// upstream's status class, naming the request id and never the upstream's words.
TEST(ReplaceUpstreamStreamError, KeepsTheClassDropsTheUpstreamWords) {
  auto five = ReplaceUpstreamStreamError(
      R"({"error":{"message":"key sk-live-123 at 10.0.0.7","type":"internal_error","code":500}})",
      "req-1");
  ASSERT_TRUE(five.has_value());
  EXPECT_EQ(five->find("sk-live"), std::string::npos);
  EXPECT_EQ(five->find("10.0.0.7"), std::string::npos);
  auto e = boost::json::parse(*five).at("error");
  EXPECT_EQ(e.at("type"), "api_error");
  EXPECT_EQ(e.at("code"), 502);
  EXPECT_EQ(e.at("message"),
            "The model server failed during the stream (upstream status 5xx); request id req-1.");

  // vLLM's ErrorResponse shape, a 4xx class, and 503 kept as it is.
  auto four = ReplaceUpstreamStreamError(
      R"({"object":"error","message":"bad","type":"BadRequestError","code":400})", "r");
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(boost::json::parse(*four).at("error").at("type"), "invalid_request_error");
  EXPECT_EQ(boost::json::parse(*four).at("error").at("code"), 400);
  auto busy = ReplaceUpstreamStreamError(R"({"error":{"message":"x","code":503}})", "r");
  EXPECT_EQ(boost::json::parse(*busy).at("error").at("code"), 503);
  auto overloaded = ReplaceUpstreamStreamError(
      R"({"error":{"type":"overloaded_error","message":"Overloaded","code":503}})", "r");
  EXPECT_EQ(boost::json::parse(*overloaded).at("error").at("type"), "overloaded_error");
  EXPECT_EQ(boost::json::parse(*overloaded).at("error").at("code"), 503);
  auto no_code = ReplaceUpstreamStreamError(R"({"error":"plain text"})", "r");
  EXPECT_EQ(boost::json::parse(*no_code).at("error").at("code"), 502);

  // Chunks, [DONE] and non-JSON data are not errors.
  EXPECT_FALSE(ReplaceUpstreamStreamError(R"({"id":"c","choices":[]})", "r"));
  EXPECT_FALSE(ReplaceUpstreamStreamError(R"({"error":null,"choices":[]})", "r"));
  EXPECT_FALSE(ReplaceUpstreamStreamError("[DONE]", "r"));
  EXPECT_FALSE(ReplaceUpstreamStreamError("{not json", "r"));
}

}  // namespace
}  // namespace kinference::api
