// SSE parser and formatter: framing per WHATWG, bytes split at every position.
#include "api/sse.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <random>
#include <string>
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

std::vector<std::string> FormattedInPieces(std::string_view text, std::vector<size_t> cuts,
                                           std::vector<SseEvent>* events = nullptr) {
  SseParser p;
  std::vector<std::string> out;
  size_t prev = 0;
  cuts.push_back(text.size());
  for (size_t c : cuts) {
    p.FeedViews(text.substr(prev, c - prev), [&](const SseEventView& e) {
      out.emplace_back(e.formatted);
      if (events) events->push_back(SseEvent{std::string(e.event), std::string(e.data)});
    });
    prev = c;
  }
  return out;
}

// An event framed as FormatSse frames it is handed out with its bytes, wherever the reads
// cut it: relaying them is relaying FormatSse(data, event).
TEST(SseParserViews, FormattedEventsCarryTheirBytesWhereverSplit) {
  const std::vector<std::string> events = {FormatSse(R"({"a":"x y"})"),
                                           FormatSse("two\nlines", "e"), FormatSse(""),
                                           FormatSse("[DONE]")};
  std::string text;
  for (const auto& e : events) text += e;
  for (size_t i = 0; i <= text.size(); ++i) {
    SCOPED_TRACE(i);
    std::vector<SseEvent> parsed;
    EXPECT_EQ(FormattedInPieces(text, {i}, &parsed), events);
    ASSERT_EQ(parsed.size(), 4u);
    EXPECT_EQ(parsed[1].data, "two\nlines");
    EXPECT_EQ(parsed[1].event, "e");
  }
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
  EXPECT_EQ(FormattedInPieces(text, every), events);
}

// Any other framing: no bytes (the relay formats the event itself), same data.
TEST(SseParserViews, OtherFramingsHaveNoFormattedBytes) {
  for (const char* text : {"data: x\r\n\r\n", "data:x\n\n", "data: x\n: note\n\n",
                           "data: x\nid: 1\n\n", "event: \ndata: x\n\n", "data: x\nevent: e\n\n",
                           "event: e\nevent: e\ndata: x\n\n", "data\n\n"}) {
    SCOPED_TRACE(text);
    std::vector<SseEvent> parsed;
    EXPECT_EQ(FormattedInPieces(text, {}, &parsed), std::vector<std::string>{""});
    ASSERT_EQ(parsed.size(), 1u);
    EXPECT_EQ(parsed[0].data, std::string_view(text).starts_with("data\n") ? "" : "x");
  }
}

// Comment and id lines before an event's first field are not part of its bytes.
TEST(SseParserViews, LinesBeforeTheFirstFieldAreNotPartOfTheEvent) {
  EXPECT_EQ(FormattedInPieces(": ping\nid: 3\ndata: x\n\n", {}),
            std::vector<std::string>{"data: x\n\n"});
  EXPECT_EQ(FormattedInPieces(": ping\n\ndata: x\n\n", {3, 9}),
            std::vector<std::string>{"data: x\n\n"});
}

// The WHATWG framing read from the whole text at once, line by line: what the parser
// must hand out however the text is cut.
std::vector<SseEvent> ReferenceEvents(std::string_view text) {
  std::vector<SseEvent> out;
  SseEvent current;
  bool has_data = false;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string_view::npos; start = nl + 1) {
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (has_data) out.push_back(current);
      current = SseEvent{};
      has_data = false;
      continue;
    }
    if (line.front() == ':') continue;
    std::string_view field = line, value;
    if (size_t colon = line.find(':'); colon != std::string_view::npos) {
      field = line.substr(0, colon);
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (has_data) current.data.push_back('\n');
      current.data.append(value);
      has_data = true;
    } else if (field == "event") {
      current.event.assign(value);
    }
  }
  return out;
}

// Streams built from random lines (vLLM's framing, CRLF, comments and keep-alives, id
// lines, "data:" without its space, empty and repeated fields), cut at random places: the
// same events as the reference, and `formatted` (when given) is FormatSse's bytes.
TEST(SseParserViews, RandomStreamsCutAnywhereMatchTheReference) {
  const std::vector<std::string> lines = {
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n",
      "data: [DONE]\n",
      "data:x\n",
      "data:  two spaces\n",
      "data\n",
      "data: \n",
      "data:\n",
      "data: crlf\r\n",
      "event: message_delta\n",
      "event:\n",
      "event: e\r\n",
      ": ping\n",
      ":\n",
      "id: 7\n",
      "retry: 10\n",
      "unknown\n",
      "\n",
      "\r\n",
      "\n",
      "\n",
      "data: a\rb\n"};
  std::mt19937 rng(20261203);
  int formatted = 0, events_seen = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) text += lines[rng() % lines.size()];
    if (rng() % 2) text += "\n";
    std::vector<size_t> cuts;
    for (size_t i = 1; i < text.size(); ++i)
      if (rng() % 4 == 0) cuts.push_back(i);
    SCOPED_TRACE(text);
    std::vector<SseEvent> parsed;
    const std::vector<std::string> bytes = FormattedInPieces(text, cuts, &parsed);
    const std::vector<SseEvent> want = ReferenceEvents(text);
    ASSERT_EQ(parsed.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(parsed[i].event, want[i].event);
      EXPECT_EQ(parsed[i].data, want[i].data);
      if (!bytes[i].empty()) {
        EXPECT_EQ(bytes[i], FormatSse(want[i].data, want[i].event));
        ++formatted;
      }
      ++events_seen;
    }
  }
  EXPECT_GT(formatted, 100);
  EXPECT_GT(events_seen, formatted);
}

// Comment, id and repeated event lines inside an unfinished event are not what counts
// toward the limit, and the event still comes out whole (without bytes: not FormatSse's).
TEST(SseParserViews, LinesInsideAnEventAreNotCountedTowardTheLimit) {
  SseParser p;
  std::vector<SseEvent> events;
  auto collect = [&](const SseEventView& e) {
    EXPECT_TRUE(e.formatted.empty());
    events.push_back(SseEvent{std::string(e.event), std::string(e.data)});
  };
  p.FeedViews("data: x\n", collect);
  const std::string noise = ": keep-alive\nid: 1\nevent: e\n";
  for (int i = 0; i < 1000; ++i) p.FeedViews(noise, collect);
  EXPECT_EQ(p.buffered(), 2u);  // "x\n", as when every event was copied out
  p.FeedViews("\n", collect);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x");
  EXPECT_EQ(events[0].event, "e");
}

// A FormatSse-framed event over kMaxKeptEventBytes is still handed out whole, without its
// bytes; the limit counts its data as before.
TEST(SseParserViews, LargeEventIsHandedOutWithoutItsBytes) {
  SseParser p;
  std::vector<std::string> data;
  const std::string line = "data: " + std::string(4096, 'z') + "\n";
  size_t lines = SseParser::kMaxKeptEventBytes / line.size() + 2;
  for (size_t i = 0; i < lines; ++i) p.FeedViews(line, [&](const SseEventView&) { ADD_FAILURE(); });
  EXPECT_EQ(p.buffered(), lines * 4097);
  p.FeedViews("\n", [&](const SseEventView& e) {
    EXPECT_TRUE(e.formatted.empty());
    data.emplace_back(e.data);
  });
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data[0].size(), lines * 4097 - 1);
  // The next event is kept again.
  std::string next;
  p.FeedViews("data: y\n\n", [&](const SseEventView& e) { next = e.formatted; });
  EXPECT_EQ(next, "data: y\n\n");
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
