// SSE parser and formatter: framing per WHATWG, bytes split at every position.
#include "api/sse.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <vector>

namespace kinference::api {
namespace {

std::vector<SseEvent> ParseInPieces(std::string_view text, std::vector<size_t> cuts) {
  SseParser p;
  std::vector<SseEvent> out;
  size_t prev = 0;
  cuts.push_back(text.size());
  for (size_t c : cuts) {
    p.Feed(text.substr(prev, c - prev), [&](const SseEvent& e) { out.push_back(e); });
    prev = c;
  }
  return out;
}

const char* kStream =
    ": keep-alive comment\r\n"
    "data: {\"a\":1}\n\n"
    "event: message_start\r\n"
    "data: line1\r\n"
    "data:line2\r\n"
    "\r\n"
    "event: ignored-without-data\n\n"
    "data: [DONE]\n\n";

void ExpectStreamEvents(const std::vector<SseEvent>& ev) {
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].event, "");
  EXPECT_EQ(ev[0].data, "{\"a\":1}");
  EXPECT_EQ(ev[1].event, "message_start");
  EXPECT_EQ(ev[1].data, "line1\nline2");
  EXPECT_EQ(ev[2].event, "");
  EXPECT_EQ(ev[2].data, "[DONE]");
}

TEST(SseParser, WholeStream) { ExpectStreamEvents(ParseInPieces(kStream, {})); }

TEST(SseParser, SplitAtEveryPosition) {
  std::string_view s = kStream;
  for (size_t i = 0; i <= s.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectStreamEvents(ParseInPieces(s, {i}));
  }
}

TEST(SseParser, ByteByByte) {
  std::string_view s = kStream;
  std::vector<size_t> cuts;
  for (size_t i = 1; i < s.size(); ++i) cuts.push_back(i);
  ExpectStreamEvents(ParseInPieces(s, cuts));
}

TEST(SseParser, HoldsIncompleteEvent) {
  SseParser p;
  int n = 0;
  p.Feed("data: par", [&](const SseEvent&) { ++n; });
  EXPECT_EQ(n, 0);
  EXPECT_EQ(p.buffered(), 9u);
  p.Feed("tial\n", [&](const SseEvent&) { ++n; });
  EXPECT_EQ(n, 0);
  p.Feed("\n", [&](const SseEvent& e) {
    ++n;
    EXPECT_EQ(e.data, "partial");
  });
  EXPECT_EQ(n, 1);
  EXPECT_EQ(p.buffered(), 0u);
}

// An upstream that never ends its line (or its event) cannot grow the gateway's memory:
// past the limit the parser reports one error event and ignores the rest.
TEST(SseParser, OversizedEventBecomesOneErrorEventAndStopsTheParser) {
  SseParser p;
  std::vector<SseEvent> events;
  auto collect = [&](const SseEvent& e) { events.push_back(e); };
  p.Feed("data: {\"ok\":1}\n\n", collect);
  const std::string piece(1 << 20, 'x');
  p.Feed("data: ", collect);
  for (size_t sent = 0; sent <= SseParser::kMaxEventBytes && !p.failed(); sent += piece.size())
    p.Feed(piece, collect);
  ASSERT_TRUE(p.failed());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].data, "{\"ok\":1}");
  EXPECT_EQ(events[1].event, "error");
  auto v = boost::json::parse(events[1].data);
  EXPECT_EQ(v.at("error").at("type"), "api_error");
  EXPECT_EQ(p.buffered(), 0u);
  p.Feed("\n\ndata: {\"late\":1}\n\n", collect);
  EXPECT_EQ(events.size(), 2u);
}

// Many data lines of one event count toward the limit too.
TEST(SseParser, OversizedMultiLineEventIsRefused) {
  SseParser p;
  std::vector<SseEvent> events;
  const std::string line = "data: " + std::string(4096, 'y') + "\n";
  for (size_t i = 0; i < SseParser::kMaxEventBytes / 4096 + 2 && !p.failed(); ++i)
    p.Feed(line, [&](const SseEvent& e) { events.push_back(e); });
  ASSERT_TRUE(p.failed());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "error");
}

TEST(SseFormat, Shapes) {
  EXPECT_EQ(FormatSse("{}"), "data: {}\n\n");
  EXPECT_EQ(FormatSse("x", "ping"), "event: ping\ndata: x\n\n");
  EXPECT_EQ(FormatSse("a\nb"), "data: a\ndata: b\n\n");
}

TEST(SseFormat, RoundTripsThroughParser) {
  std::string text = FormatSse("one") + FormatSse("two\nlines", "e") + FormatSse("");
  auto ev = ParseInPieces(text, {});
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].data, "one");
  EXPECT_EQ(ev[1].data, "two\nlines");
  EXPECT_EQ(ev[1].event, "e");
  EXPECT_EQ(ev[2].data, "");
}

}  // namespace
}  // namespace kinference::api
