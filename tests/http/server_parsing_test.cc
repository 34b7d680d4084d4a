// Request parsing against smuggling and odd clients (RFC 9112, RFC 9110), on raw sockets:
// what the server refuses (status, then the connection closed with the rest unread, so
// that no byte after the refused head is taken for a request), what it still serves, and
// which of these Beast's parser refuses itself and which http::detail::CheckRequestHead
// adds. Every refusal comes in the path's error shape with the error headers
// (ServerOptions::error_body, error_headers).
#include <gtest/gtest.h>

#include <atomic>

#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::ServerFixture;

class ParsingTest : public ServerFixture {
 protected:
  void SetUp() override {
    setup_ = [this](Server& s) {
      auto echo = [this](Request r, std::shared_ptr<ResponseWriter> w) {
        ++handled_;
        w->Send(200, "text/plain", r.method + " " + r.path + " [" + r.body + "]");
      };
      s.Route("POST", "/echo", echo);
      s.Route("GET", "/echo", echo);
      s.Route("GET", "/secret", echo);
      auto folded = [](Request r, std::shared_ptr<ResponseWriter> w) {
        w->Send(200, "text/plain", "{" + std::string(r.headers.Find("x-folded")) + "}");
      };
      s.Route("GET", "/folded", folded);
      s.Route("POST", "/folded-post", folded);
    };
    ServerOptions o;
    o.error_body = [](std::string_view path, const Status& s, int) {
      return "{\"shaped_for\":\"" + std::string(path) + "\",\"message\":\"" + s.message() + "\"}";
    };
    o.error_headers = EchoRequestId;
    StartServer(o);
  }

  // Responses in `got` (each has one Content-Type; a message may mention "HTTP/1.1").
  static int Responses(const std::string& got) {
    int n = 0;
    for (size_t at = got.find("\r\nContent-Type: "); at != std::string::npos;
         at = got.find("\r\nContent-Type: ", at + 1)) {
      ++n;
    }
    return n;
  }

  // `head` (request line and fields, without the blank line), then `rest`; expects exactly
  // one response with `status`, the connection closed after it, no handler run.
  void ExpectRefused(const std::string& head, const std::string& rest, int status) {
    const int before = handled_.load();
    std::string got = RawExchange(head + "\r\n" + rest);
    SCOPED_TRACE(head);
    EXPECT_EQ(got.rfind("HTTP/1.1 " + std::to_string(status) + " ", 0), 0u) << got;
    EXPECT_EQ(Responses(got), 1) << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
    EXPECT_NE(got.find("\"shaped_for\":\"/echo\""), std::string::npos) << got;
    EXPECT_NE(got.find("x-request-id: abc"), std::string::npos) << got;
    EXPECT_EQ(handled_.load(), before) << got;
  }

  std::atomic<int> handled_{0};
};

// A second request hidden in what a front would take for the first one's body.
const std::string kSmuggled = "GET /secret HTTP/1.1\r\nHost: x\r\n\r\n";

// The known gap: a Transfer-Encoding whose final coding is not chunked beside a
// Content-Length was framed by the Content-Length (a front that honours Transfer-Encoding
// sees a different request boundary). Now 400 and closed (RFC 9112 section 6.3).
TEST_F(ParsingTest, TransferEncodingNotEndingInChunkedBesideContentLengthIsRefused) {
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nTransfer-Encoding: xchunked\r\n"
      "Content-Length: 5\r\n",
      "hello" + kSmuggled, 400);
  // The same with Content-Length first (Beast refuses this order itself).
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nContent-Length: 5\r\n"
      "Transfer-Encoding: xchunked\r\n",
      "hello" + kSmuggled, 400);
}

// Both framings is refused even when Transfer-Encoding is a valid chunked (RFC 9112
// section 6.1: the server MAY reject, and MUST close either way).
TEST_F(ParsingTest, TransferEncodingBesideContentLengthIsRefusedInEitherOrder) {
  const std::string chunked_body = "5\r\nhello\r\n0\r\n\r\n";
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nTransfer-Encoding: chunked\r\n"
      "Content-Length: 5\r\n",
      chunked_body + kSmuggled, 400);
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nContent-Length: 5\r\n"
      "Transfer-Encoding: chunked\r\n",
      chunked_body + kSmuggled, 400);
}

// Without a Content-Length, a Transfer-Encoding not ending in chunked left the request
// with an empty body and its content parsed as the next request. Now 400.
TEST_F(ParsingTest, TransferEncodingWhoseFinalCodingIsNotChunkedIsRefused) {
  for (const std::string te : {"gzip", "xchunked", "chunked, gzip", "identity", ""}) {
    ExpectRefused(
        "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nTransfer-Encoding: " + te + "\r\n",
        kSmuggled, 400);
  }
}

// RFC 9112 section 7: chunked is applied once. In one line Beast does not take it as
// chunked (so the body would be read by Content-Length or as empty); in two lines Beast
// refuses it itself.
TEST_F(ParsingTest, ChunkedAppliedTwiceIsRefused) {
  const std::string chunked_body = "5\r\nhello\r\n0\r\n\r\n";
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\n"
      "Transfer-Encoding: chunked, chunked\r\n",
      chunked_body + kSmuggled, 400);
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nTransfer-Encoding: chunked\r\n"
      "Transfer-Encoding: chunked\r\n",
      chunked_body + kSmuggled, 400);
}

// A transfer coding the server does not decode, before a final chunked: 501 (RFC 9112
// section 6.1), also when the codings come in separate lines.
TEST_F(ParsingTest, TransferCodingOtherThanChunkedIsNotImplemented) {
  const std::string chunked_body = "5\r\nhello\r\n0\r\n\r\n";
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\n"
      "Transfer-Encoding: gzip, chunked\r\n",
      chunked_body, 501);
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\n"
      "Transfer-Encoding: xchunked, chunked\r\n",
      chunked_body, 501);
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nTransfer-Encoding: gzip\r\n"
      "Transfer-Encoding: chunked\r\n",
      chunked_body, 501);
}

// RFC 9112 section 6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing.
TEST_F(ParsingTest, TransferEncodingInAnHttp10RequestIsRefused) {
  ExpectRefused(
      "POST /echo HTTP/1.0\r\nHost: x\r\nx-request-id: abc\r\nTransfer-Encoding: chunked\r\n",
      "5\r\nhello\r\n0\r\n\r\n", 400);
}

TEST_F(ParsingTest, ChunkedRequestIsServedWhateverTheCodingsCase) {
  for (const std::string te : {"chunked", "Chunked", "CHUNKED"}) {
    std::string got = RawExchange("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + te +
                                  "\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
    EXPECT_NE(got.find("POST /echo [hello]"), std::string::npos) << got;
  }
}

// Content-Length: differing values (in one line or two) and values that are not a
// decimal number are refused by Beast (RFC 9112 section 6.3: invalid length, 400);
// identical repeated values are taken as one (RFC 9110 section 8.6 allows it).
TEST_F(ParsingTest, ConflictingOrInvalidContentLengthIsRefused) {
  for (const std::string cl : {"Content-Length: 5\r\nContent-Length: 6", "Content-Length: 5, 6",
                               "Content-Length: +5", "Content-Length: -5", "Content-Length: 0x5",
                               "Content-Length: 5 5", "Content-Length: 99999999999999999999999"}) {
    ExpectRefused("POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\n" + cl + "\r\n",
                  "hello" + kSmuggled, 400);
  }
}

TEST_F(ParsingTest, IdenticalRepeatedContentLengthIsOneLength) {
  for (const std::string cl : {"Content-Length: 5\r\nContent-Length: 5", "Content-Length: 5, 5"}) {
    std::string got = RawExchange("POST /echo HTTP/1.1\r\nHost: x\r\n" + cl +
                                  "\r\nConnection: close\r\n\r\nhello");
    EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
    EXPECT_NE(got.find("POST /echo [hello]"), std::string::npos) << got;
  }
}

// RFC 9112 section 5.1: whitespace between a field name and its colon is 400 (Beast).
// Bare LF line ends (section 2.2 lets a recipient take LF alone) are refused by Beast as
// well; no client of the gateway sends them.
TEST_F(ParsingTest, MalformedFieldLinesAreRefused) {
  ExpectRefused("POST /echo HTTP/1.1\r\nx-request-id: abc\r\nHost : x\r\nContent-Length: 5\r\n",
                "hello", 400);
  ExpectRefused("POST /echo HTTP/1.1\r\nx-request-id: abc\r\nHost: x\r\nContent-Length : 5\r\n",
                "hello", 400);
  std::string got = RawExchange("GET /echo HTTP/1.1\nHost: x\nConnection: close\n\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
  EXPECT_EQ(handled_.load(), 0);
}

// RFC 9112 section 5.2: obs-fold (a field line continued on the next, starting with
// whitespace) is either refused or replaced by spaces; Beast replaces it by one space.
// Folded into the framing fields it cannot smuggle: the joined value is no valid
// Transfer-Encoding or Content-Length (nor Host).
TEST_F(ParsingTest, ObsFoldIsJoinedWithASpaceAndNeverFramesABody) {
  std::string got = RawExchange(
      "GET /folded HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n  b\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
  EXPECT_NE(got.find("{a b}"), std::string::npos) << got;
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nTransfer-Encoding: gzip\r\n"
      " chunked\r\n",
      "5\r\nhello\r\n0\r\n\r\n" + kSmuggled, 400);
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nTransfer-Encoding: chunked\r\n"
      "\t, chunked\r\n",
      "5\r\nhello\r\n0\r\n\r\n" + kSmuggled, 400);
  ExpectRefused(
      "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nContent-Length: 5\r\n 0\r\n",
      "hello" + kSmuggled, 400);
  ExpectRefused("POST /echo HTTP/1.1\r\nHost: x\r\n y\r\nx-request-id: abc\r\n", kSmuggled, 400);
}

// RFC 9112 section 3.2: an HTTP/1.1 request without Host, or with more than one or an
// invalid one, is 400; HTTP/1.0 may omit it.
TEST_F(ParsingTest, Http11RequestNeedsExactlyOneValidHost) {
  ExpectRefused("GET /echo HTTP/1.1\r\nx-request-id: abc\r\n", kSmuggled, 400);
  ExpectRefused("GET /echo HTTP/1.1\r\nHost: x\r\nHost: y\r\nx-request-id: abc\r\n", kSmuggled,
                400);
  ExpectRefused("GET /echo HTTP/1.1\r\nHost: x/y\r\nx-request-id: abc\r\n", kSmuggled, 400);
  ExpectRefused("GET /echo HTTP/1.1\r\nHost: a@b\r\nx-request-id: abc\r\n", kSmuggled, 400);
  ExpectRefused("GET /echo HTTP/1.0\r\nHost: x\r\nHost: y\r\nx-request-id: abc\r\n", kSmuggled,
                400);
  for (const std::string host : {"example.com", "127.0.0.1:8000", "[::1]:8000", ""}) {
    std::string got =
        RawExchange("GET /echo HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << host << ": " << got;
  }
  std::string got = RawExchange("GET /echo HTTP/1.0\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
  EXPECT_NE(got.find("GET /echo []"), std::string::npos) << got;
}

// RFC 9110 section 15.5.16 and 12.5.3: a body in a content coding the server does not
// decode is 415 with Accept-Encoding naming what it takes (was: the compressed bytes
// reached the handler and failed as JSON). Identity, or no body, is served.
TEST_F(ParsingTest, CompressedRequestBodyIsUnsupportedMediaType) {
  for (const std::string ce : {"gzip", "br", "identity, deflate", "GZIP"}) {
    const int before = handled_.load();
    std::string got = RawExchange(
        "POST /echo HTTP/1.1\r\nHost: x\r\nx-request-id: abc\r\nContent-Encoding: " + ce +
        "\r\nContent-Length: 5\r\n\r\nhello");
    SCOPED_TRACE(ce);
    EXPECT_EQ(got.rfind("HTTP/1.1 415 ", 0), 0u) << got;
    EXPECT_NE(got.find("\r\nAccept-Encoding: identity\r\n"), std::string::npos) << got;
    EXPECT_NE(got.find("\"shaped_for\":\"/echo\""), std::string::npos) << got;
    EXPECT_NE(got.find("x-request-id: abc"), std::string::npos) << got;
    EXPECT_EQ(handled_.load(), before);
  }
  // Chunked bodies too.
  std::string got = RawExchange(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
      "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 415 ", 0), 0u) << got;
  got = RawExchange(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Encoding: identity\r\nContent-Length: 5\r\n"
      "Connection: close\r\n\r\nhello");
  EXPECT_NE(got.find("POST /echo [hello]"), std::string::npos) << got;
  got = RawExchange(
      "GET /echo HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
}

// RFC 6585 section 5: a head over the limit (kMaxRequestHeaderBytes) is 431 Request Header
// Fields Too Large, in the path's shape, the connection closed (was: 400, as if malformed).
// A head just under the limit is served.
TEST_F(ParsingTest, HeaderFieldsOverTheLimitAreRequestHeaderFieldsTooLarge) {
  for (size_t size : {size_t{kMaxRequestHeaderBytes}, size_t{100 * 1024}}) {
    const int before = handled_.load();
    std::string got = RawExchange(
        "GET /echo HTTP/1.1\r\nHost: x\r\nx-big: " + std::string(size, 'a') + "\r\n\r\n");
    SCOPED_TRACE(size);
    EXPECT_EQ(got.rfind("HTTP/1.1 431 ", 0), 0u) << got;
    EXPECT_EQ(Responses(got), 1) << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
    EXPECT_NE(got.find("\"shaped_for\":\"/echo\""), std::string::npos) << got;
    EXPECT_EQ(handled_.load(), before) << got;
  }
  std::string got = RawExchange("GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-big: " +
                                std::string(kMaxRequestHeaderBytes - 200, 'a') + "\r\n\r\n");
  EXPECT_NE(got.find("GET /echo []"), std::string::npos) << got.substr(0, 200);
}

// The refusals are made on the head, before the body: a client announcing a body and
// asking for 100-continue gets the refusal instead.
TEST_F(ParsingTest, RefusalComesBeforeHundredContinue) {
  std::string got = RawExchange(
      "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Encoding: gzip\r\n"
      "Content-Length: 1000000\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 415 ", 0), 0u) << got;
  EXPECT_EQ(got.find("100 Continue"), std::string::npos) << got;
}

// RFC 9110 section 6.5.1: trailer fields are not merged into the header section. The
// handler gets the head the checks above saw; Beast adds a chunked body's trailer fields
// to its message, and until the request was built at header time they reached the
// handler's headers (so a trailer could add a field no check had seen).
TEST_F(ParsingTest, TrailerFieldsDoNotReachTheHandlersHeaders) {
  std::string got = RawExchange(
      "POST /folded-post HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
      "Connection: close\r\n\r\n5\r\nhello\r\n0\r\nX-Folded: from-trailer\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
  EXPECT_NE(got.find("{}"), std::string::npos) << got;
}

// A well-formed keep-alive exchange is unchanged: two requests on one connection.
TEST_F(ParsingTest, PipelinedWellFormedRequestsAreBothServed) {
  std::string got = RawExchange(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
      "GET /secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(Responses(got), 2) << got;
  EXPECT_NE(got.find("POST /echo [hello]"), std::string::npos) << got;
  EXPECT_NE(got.find("GET /secret []"), std::string::npos) << got;
}

}  // namespace
}  // namespace kinference::http
