// ServerOptions::error_body: the errors the server answers itself (413, malformed 400, 404)
// take the shape the path's API uses; OpenAI's by default. ServerOptions::error_headers:
// those errors carry the headers it makes from the request's headers as far as read.
#include <gtest/gtest.h>

#include "api/openai/error.h"
#include "server_fixture.h"

namespace kinference::http {
namespace {

using testing::ServerFixture;

class ErrorShapeTest : public ServerFixture {
 protected:
  void StartShaped() {
    ServerOptions o;
    o.max_body_bytes = 16;
    o.error_body = [](std::string_view path, const Status& s, int) {
      if (path.starts_with("/v1/messages")) {
        return std::string(R"({"type":"error","error":{"type":"shaped","message":")") +
               s.message() + "\"}}";
      }
      return api::OpenAiErrorBody(s);
    };
    setup_ = [](Server& s) {
      s.Route("POST", "/v1/messages", [](Request, std::shared_ptr<ResponseWriter> w) {
        w->Send(200, "application/json", "{}");
      });
    };
    o.error_headers = EchoRequestId;
    StartServer(o);
  }
};

TEST_F(ErrorShapeTest, PayloadTooLargeUsesThePathsShape) {
  StartShaped();
  std::string body(64, 'x');
  std::string got = RawExchange(
      "POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 64\r\n\r\n" + body);
  EXPECT_NE(got.find("413"), std::string::npos) << got;
  EXPECT_NE(got.find(R"({"type":"error","error":{"type":"shaped")"), std::string::npos) << got;
  got = RawExchange("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 64\r\n\r\n" +
                    body);
  EXPECT_NE(got.find("413"), std::string::npos) << got;
  EXPECT_NE(got.find(R"("type":"invalid_request_error")"), std::string::npos) << got;
}

TEST_F(ErrorShapeTest, MalformedRequestAndUnknownPathUseThePathsShape) {
  StartShaped();
  std::string got = RawExchange(
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  EXPECT_NE(got.find("400"), std::string::npos) << got;
  EXPECT_NE(got.find(R"("type":"shaped")"), std::string::npos) << got;
  got = RawExchange("GET /v1/messages/count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(got.find("404"), std::string::npos) << got;
  EXPECT_NE(got.find(R"("type":"shaped")"), std::string::npos) << got;
  // Not even a request line: the default (OpenAI) shape.
  got = RawExchange("\x01\x02 garbage\r\n\r\n");
  EXPECT_NE(got.find("400"), std::string::npos) << got;
  EXPECT_NE(got.find(R"("error":{"message")"), std::string::npos) << got;
}

TEST_F(ErrorShapeTest, ServerErrorsCarryTheHeadersMadeFromTheRequest) {
  StartShaped();
  // 413: the head was read, so the client's id is there to echo.
  std::string got = RawExchange(
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-request-id: client-7\r\n"
      "Content-Length: 64\r\n\r\n" +
      std::string(64, 'x'));
  EXPECT_NE(got.find("413"), std::string::npos) << got;
  EXPECT_NE(got.find("x-request-id: client-7\r\n"), std::string::npos) << got;
  // 404 on a parsed request: the same.
  got = RawExchange(
      "GET /nowhere HTTP/1.1\r\nHost: x\r\nx-request-id: client-8\r\nConnection: close\r\n\r\n");
  EXPECT_NE(got.find("404"), std::string::npos) << got;
  EXPECT_NE(got.find("x-request-id: client-8\r\n"), std::string::npos) << got;
  // A request line that does not parse: no request headers, a made id.
  got = RawExchange("\x01\x02 garbage\r\n\r\n");
  EXPECT_NE(got.find("400"), std::string::npos) << got;
  EXPECT_NE(got.find("x-request-id: made-here\r\n"), std::string::npos) << got;
}

// A refusal no ErrorCode maps to (415, 431, 501) goes out with its own status, and the
// error body gets that status too: OpenAI's `code` says 415, not the kInvalidArgument's 400
// it said before.
TEST_F(ErrorShapeTest, OpenAiCodeIsTheStatusSentForRefusalsWithoutAnErrorCode) {
  StartServer();
  std::string got = RawExchange(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
      "Content-Length: 5\r\n\r\nhello");
  EXPECT_EQ(got.rfind("HTTP/1.1 415 ", 0), 0u) << got;
  EXPECT_NE(got.find(R"("code":415)"), std::string::npos) << got;
  got = RawExchange(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n"
      "\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 501 ", 0), 0u) << got;
  EXPECT_NE(got.find(R"("code":501)"), std::string::npos) << got;
  got = RawExchange("GET /v1/models HTTP/1.1\r\nHost: x\r\nx-big: " + std::string(100 * 1024, 'a') +
                    "\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 431 ", 0), 0u) << got;
  EXPECT_NE(got.find(R"("code":431)"), std::string::npos) << got;
}

}  // namespace
}  // namespace kinference::http
