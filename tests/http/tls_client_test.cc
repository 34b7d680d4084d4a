// The HTTP client over TLS: verification against a configured CA, SNI, and a
// verification failure reported as an error rather than a response; and http::Server
// serving HTTPS (ServerOptions::tls_cert_file), streamed responses included.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <thread>

#include "http/client.h"
#include "http/server.h"
#include "tls_fake_server.h"

namespace kinference::http {
namespace {

using kinference::testing::MakeTestCert;
using kinference::testing::TlsFakeServer;

ClientRequest Post(const std::string& host, uint16_t port, const std::string& ca_file) {
  ClientRequest r;
  r.host = host;
  r.port = port;
  r.target = "/v1/chat/completions";
  r.body = R"({"model":"m","messages":[]})";
  r.headers.Add("authorization", "Bearer sk-x");
  r.tls = true;
  r.ca_file = ca_file;
  r.header_timeout_s = 30;  // hang guard only
  return r;
}

TEST(TlsClientTest, VerifiedCallSucceeds) {
  auto cert = MakeTestCert("server");
  ASSERT_FALSE(cert.cert_file.empty()) << "openssl CLI failed";
  TlsFakeServer server(cert);
  auto res = FetchSync(Post("127.0.0.1", server.port(), cert.cert_file));
  ASSERT_TRUE(res.ok()) << res.status().message();
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("\"usage\""), std::string::npos);
  EXPECT_EQ(server.last_authorization(), "Bearer sk-x");
  EXPECT_EQ(server.last_target(), "/v1/chat/completions");
  EXPECT_EQ(server.last_sni(), "");  // no SNI for an IP literal
}

TEST(TlsClientTest, HostNameGetsSniAndIsVerified) {
  auto cert = MakeTestCert("server");
  ASSERT_FALSE(cert.cert_file.empty());
  TlsFakeServer server(cert);
  // "localhost" may resolve to ::1 first; the client tries each address.
  auto res = FetchSync(Post("localhost", server.port(), cert.cert_file));
  ASSERT_TRUE(res.ok()) << res.status().message();
  EXPECT_EQ(server.last_sni(), "localhost");
}

TEST(TlsClientTest, UntrustedCertificateIsAnError) {
  auto cert = MakeTestCert("server");
  auto other = MakeTestCert("other");
  ASSERT_FALSE(cert.cert_file.empty());
  ASSERT_FALSE(other.cert_file.empty());
  TlsFakeServer server(cert);
  auto res = FetchSync(Post("127.0.0.1", server.port(), other.cert_file));
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(res.status().message().find("tls handshake"), std::string::npos)
      << res.status().message();
  EXPECT_EQ(server.requests(), 0);
}

TEST(TlsClientTest, SystemTrustStoreRejectsSelfSignedCertificate) {
  auto cert = MakeTestCert("server");
  ASSERT_FALSE(cert.cert_file.empty());
  TlsFakeServer server(cert);
  auto res = FetchSync(Post("127.0.0.1", server.port(), ""));
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(server.requests(), 0);
}

TEST(TlsClientTest, MissingCaFileIsAnError) {
  auto res = FetchSync(Post("127.0.0.1", 1, "/nonexistent/ca.pem"));
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.status().message().find("/nonexistent/ca.pem"), std::string::npos);
}

TEST(TlsServerTest, ServesWholeAndStreamedResponsesOverTls) {
  auto cert = MakeTestCert("server");
  ASSERT_FALSE(cert.cert_file.empty());
  boost::asio::io_context io;
  ServerOptions options;
  options.tls_cert_file = cert.cert_file;
  options.tls_key_file = cert.key_file;
  Server server(io, options);
  server.Route("POST", "/whole", [](Request r, std::shared_ptr<ResponseWriter> w) {
    w->Send(200, "text/plain", "got " + r.body);
  });
  server.Route("POST", "/stream", [](Request, std::shared_ptr<ResponseWriter> w) {
    w->StartStream(200, "text/event-stream");
    w->Write("data: 1\n\n");
    w->Write("data: 2\n\n");
    w->End();
  });
  auto port = server.Start();
  ASSERT_TRUE(port.ok()) << port.status().message();
  std::thread t([&] { io.run(); });
  ClientRequest r = Post("127.0.0.1", *port, cert.cert_file);
  r.target = "/whole";
  r.body = "abc";
  auto whole = FetchSync(r);
  ClientRequest s = Post("127.0.0.1", *port, cert.cert_file);
  s.target = "/stream";
  auto stream = FetchSync(s);
  ClientRequest plain = r;
  plain.tls = false;  // plain HTTP to an HTTPS port is not answered
  auto refused = FetchSync(plain);
  boost::asio::post(io, [&] { server.Stop(); });
  t.join();
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->body, "got abc");
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  EXPECT_EQ(stream->body, "data: 1\n\ndata: 2\n\n");
  EXPECT_TRUE(!refused.ok() || refused->status != 200);
}

TEST(TlsServerTest, BadCertificateFileFailsStart) {
  boost::asio::io_context io;
  ServerOptions options;
  options.tls_cert_file = "/nonexistent.crt";
  options.tls_key_file = "/nonexistent.key";
  Server server(io, options);
  auto port = server.Start();
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace kinference::http
