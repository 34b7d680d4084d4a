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

}  // namespace
}  // namespace kinference::api
