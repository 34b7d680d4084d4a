// http::Server TLS: the certificate is reloaded when its files change (new connections get
// the new one; a broken replacement keeps the old one), and with a client CA only clients
// presenting a certificate from it are served. Certificates are made at test time
// (tls_fake_server.h); clients are the library's own (server verification) and a raw
// Asio TLS client (client certificates).
#include "http/tls_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "http/client.h"
#include "http/server.h"
#include "tls_fake_server.h"

namespace kinference::http {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using kinference::testing::MakeTestCert;
using kinference::testing::TestCert;

// Copies the certificate and key into DIR/tls.crt and DIR/tls.key by rename (atomic, as a
// Kubernetes Secret update or a certificate manager's renewal is).
void Install(const TestCert& c, const fs::path& dir) {
  fs::copy_file(c.cert_file, dir / "tls.crt.new", fs::copy_options::overwrite_existing);
  fs::copy_file(c.key_file, dir / "tls.key.new", fs::copy_options::overwrite_existing);
  fs::rename(dir / "tls.key.new", dir / "tls.key");
  fs::rename(dir / "tls.crt.new", dir / "tls.crt");
}

class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kinference-tls-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    a_ = MakeTestCert("a");
    b_ = MakeTestCert("b");
    ASSERT_FALSE(a_.cert_file.empty() || b_.cert_file.empty()) << "openssl CLI failed";
  }
  void TearDown() override {
    if (server_) asio::post(io_, [this] { server_->Stop(); });
    if (thread_.joinable()) thread_.join();
    fs::remove_all(dir_);
  }
  void Start(ServerOptions o) {
    o.on_tls_reload = [this](const Status& st) {
      std::lock_guard<std::mutex> lock(mu_);
      reloads_.push_back(st);
    };
    server_.emplace(io_, o);
    server_->Route("GET", "/ok", [](Request, std::shared_ptr<ResponseWriter> w) {
      w->Send(200, "text/plain", "ok");
    });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().message();
    port_ = *port;
    thread_ = std::thread([this] { io_.run(); });
  }
  // A verified GET /ok trusting only `ca_file`.
  Result<Response> Get(const std::string& ca_file) {
    ClientRequest r;
    r.method = "GET";
    r.host = "127.0.0.1";
    r.port = port_;
    r.target = "/ok";
    r.tls = true;
    r.ca_file = ca_file;
    r.header_timeout_s = 10;
    return FetchSync(r);
  }
  std::vector<Status> Reloads() {
    std::lock_guard<std::mutex> lock(mu_);
    return reloads_;
  }
  ServerOptions FilesIn(const fs::path& dir) {
    ServerOptions o;
    o.tls_cert_file = (dir / "tls.crt").string();
    o.tls_key_file = (dir / "tls.key").string();
    o.tls_reload_interval_s = 0.1;
    return o;
  }

  fs::path dir_;
  TestCert a_, b_;
  asio::io_context io_;
  std::optional<Server> server_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Status> reloads_;
};

TEST_F(TlsServerTest, NewCertificateIsServedAfterItsFilesChange) {
  Install(a_, dir_);
  Start(FilesIn(dir_));
  ASSERT_TRUE(Get(a_.cert_file).ok());
  EXPECT_FALSE(Get(b_.cert_file).ok()) << "b is not served yet";
  Install(b_, dir_);
  // Hang guard: the reload check runs every 0.1 s.
  bool served = false;
  for (int i = 0; i < 200 && !served; ++i) {
    served = Get(b_.cert_file).ok();
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served) << "certificate b never served";
  EXPECT_FALSE(Get(a_.cert_file).ok()) << "a is no longer served";
  auto reloads = Reloads();
  ASSERT_FALSE(reloads.empty());
  EXPECT_TRUE(reloads.back().ok()) << reloads.back().message();
}

TEST_F(TlsServerTest, BrokenReplacementKeepsTheServedCertificateAndIsReported) {
  Install(a_, dir_);
  Start(FilesIn(dir_));
  ASSERT_TRUE(Get(a_.cert_file).ok());
  {
    std::ofstream(dir_ / "tls.crt.new") << "not a certificate\n";
    fs::rename(dir_ / "tls.crt.new", dir_ / "tls.crt");
  }
  bool reported = false;
  for (int i = 0; i < 200 && !reported; ++i) {
    for (const auto& st : Reloads()) reported |= !st.ok();
    if (!reported) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(reported) << "the failed reload was not reported";
  EXPECT_NE(Reloads().back().message().find("tls.crt"), std::string::npos)
      << Reloads().back().message();
  auto still = Get(a_.cert_file);
  EXPECT_TRUE(still.ok()) << still.status().message();
}

TEST_F(TlsServerTest, KeyThatDoesNotMatchTheCertificateFailsStart) {
  ServerOptions o;
  o.tls_cert_file = a_.cert_file;
  o.tls_key_file = b_.key_file;
  Server server(io_, o);
  auto port = server.Start();
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kInvalidArgument);
  // OpenSSL refuses the key when it is loaded ("key values mismatch"): the key file is named.
  EXPECT_NE(port.status().message().find(b_.key_file), std::string::npos)
      << port.status().message();
}

// A raw TLS client trusting the server's certificate `server_ca`, presenting `client` if
// given; returns the response head's first line, or the error.
std::string RawTlsGet(uint16_t port, const std::string& server_ca, const TestCert* client) {
  asio::io_context io;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.load_verify_file(server_ca);
  ctx.set_verify_mode(asio::ssl::verify_peer);
  if (client) {
    ctx.use_certificate_chain_file(client->cert_file);
    ctx.use_private_key_file(client->key_file, asio::ssl::context::pem);
  }
  asio::ssl::stream<asio::ip::tcp::socket> s(io, ctx);
  boost::system::error_code ec;
  s.next_layer().connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  if (!ec) s.handshake(asio::ssl::stream_base::client, ec);
  std::string req = "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  if (!ec) asio::write(s, asio::buffer(req), ec);
  std::string got;
  char buf[4096];
  while (!ec) {
    size_t n = s.read_some(asio::buffer(buf), ec);
    got.append(buf, n);
  }
  if (got.empty()) return "error: " + ec.message();
  return got.substr(0, got.find("\r\n"));
}

TEST_F(TlsServerTest, ClientCertificateFromTheClientCaIsRequired) {
  TestCert client = MakeTestCert("client");
  TestCert stranger = MakeTestCert("stranger");
  ASSERT_FALSE(client.cert_file.empty() || stranger.cert_file.empty());
  ServerOptions o;
  o.tls_cert_file = a_.cert_file;
  o.tls_key_file = a_.key_file;
  o.tls_client_ca_file = client.cert_file;  // self-signed: its own CA
  Start(o);
  EXPECT_EQ(RawTlsGet(port_, a_.cert_file, &client), "HTTP/1.1 200 OK");
  EXPECT_NE(RawTlsGet(port_, a_.cert_file, nullptr).rfind("HTTP/1.1", 0), 0u)
      << "no client certificate: not served";
  EXPECT_NE(RawTlsGet(port_, a_.cert_file, &stranger).rfind("HTTP/1.1", 0), 0u)
      << "a certificate from another CA: not served";
}

TEST(TlsFilesStampTest, ChangesWhenAFileIsReplaced) {
  auto a = MakeTestCert("a");
  auto b = MakeTestCert("b");
  ASSERT_FALSE(a.cert_file.empty() || b.cert_file.empty());
  fs::path dir = fs::path(a.cert_file).parent_path();
  TlsServerFiles files{(dir / "x.crt").string(), (dir / "x.key").string(), ""};
  EXPECT_NE(TlsFilesStamp(files).find("missing"), std::string::npos);
  fs::copy_file(a.cert_file, files.cert_file);
  fs::copy_file(a.key_file, files.key_file);
  std::string before = TlsFilesStamp(files);
  EXPECT_EQ(TlsFilesStamp(files), before);
  fs::copy_file(b.cert_file, dir / "x.crt.new");
  fs::rename(dir / "x.crt.new", files.cert_file);
  EXPECT_NE(TlsFilesStamp(files), before);
}

}  // namespace
}  // namespace kinference::http
