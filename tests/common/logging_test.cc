#include "common/logging.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <limits>

namespace kinference {
namespace {

// 2026-12-01T17:43:26.957Z
constexpr int64_t kTimeMs = 1796147006957;

TEST(LogEvent, JsonLineIsOneObjectWithFixedMembersThenFields) {
  std::string line = FormatLogEvent(
      LogFormat::kJson, kTimeMs, LogLevel::kInfo, "access", "request",
      {{"request_id", std::string("abc")}, {"status", int64_t{200}}, {"ttft_s", 0.25}});
  EXPECT_EQ(line,
            "{\"time\":\"2026-12-01T17:43:26.957Z\",\"level\":\"info\",\"logger\":\"access\","
            "\"msg\":\"request\",\"request_id\":\"abc\",\"status\":200,\"ttft_s\":0.25}");
  auto v = boost::json::parse(line);
  EXPECT_EQ(v.at("status").as_int64(), 200);
}

TEST(LogEvent, JsonEscapesQuotesBackslashesAndControlCharacters) {
  std::string line = FormatLogEvent(LogFormat::kJson, kTimeMs, LogLevel::kWarn, "gateway",
                                    "say \"hi\"\n\\ \x01", {{"k", std::string("\t\x7f")}});
  auto v = boost::json::parse(line);  // throws if not valid JSON
  EXPECT_EQ(v.at("msg").as_string(), "say \"hi\"\n\\ \x01");
  EXPECT_EQ(v.at("k").as_string(), "\t\x7f");
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line";
}

TEST(LogEvent, FieldNamedLikeAFixedMemberIsPrefixed) {
  std::string line = FormatLogEvent(LogFormat::kJson, kTimeMs, LogLevel::kInfo, "access", "m",
                                    {{"msg", std::string("x")}, {"level", int64_t{1}}});
  auto v = boost::json::parse(line).as_object();
  EXPECT_EQ(v.at("msg").as_string(), "m");
  EXPECT_EQ(v.at("field_msg").as_string(), "x");
  EXPECT_EQ(v.at("field_level").as_int64(), 1);
}

TEST(LogEvent, NonFiniteNumbersAreNull) {
  std::string line = FormatLogEvent(LogFormat::kJson, kTimeMs, LogLevel::kInfo, "a", "m",
                                    {{"x", std::numeric_limits<double>::quiet_NaN()},
                                     {"y", std::numeric_limits<double>::infinity()}});
  auto v = boost::json::parse(line).as_object();
  EXPECT_TRUE(v.at("x").is_null());
  EXPECT_TRUE(v.at("y").is_null());
}

TEST(LogEvent, TextLineHasKeyValueFieldsQuotedOnlyWhenNeeded) {
  std::string line = FormatLogEvent(LogFormat::kText, kTimeMs, LogLevel::kInfo, "access", "request",
                                    {{"request_id", std::string("abc")},
                                     {"model", std::string("a b")},
                                     {"empty", std::string()},
                                     {"eq", std::string("k=v")},
                                     {"status", int64_t{404}},
                                     {"ttft_s", 1.5}});
  // Time is local time in text lines (as spdlog's own text lines).
  auto body = line.substr(line.find("] [access]"));
  EXPECT_EQ(body,
            "] [access] [info] request request_id=abc model=\"a b\" empty=\"\" eq=\"k=v\" "
            "status=404 ttft_s=1.5");
}

TEST(LogLevels, ParseAndNameRoundTrip) {
  for (auto name : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    auto l = ParseLogLevel(name);
    ASSERT_TRUE(l.ok()) << name;
    EXPECT_EQ(LogLevelName(*l), name);
  }
  EXPECT_FALSE(ParseLogLevel("verbose").ok());
  EXPECT_FALSE(ParseLogFormat("xml").ok());
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
}

TEST(LogLevels, StepMovesTowardsTraceOrCriticalAndClamps) {
  ConfigureLogging("test", {LogFormat::kText, LogLevel::kInfo});
  EXPECT_EQ(StepLogLevel(1), LogLevel::kDebug);
  EXPECT_EQ(StepLogLevel(1), LogLevel::kTrace);
  EXPECT_EQ(StepLogLevel(1), LogLevel::kTrace);
  EXPECT_EQ(StepLogLevel(-10), LogLevel::kCritical);
  EXPECT_EQ(CurrentLogLevel(), LogLevel::kCritical);
  SetLogLevel(LogLevel::kWarn);
  EXPECT_EQ(CurrentLogLevel(), LogLevel::kWarn);
}

}  // namespace
}  // namespace kinference
