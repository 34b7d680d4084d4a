#include "tls_fake_server.h"

#include <openssl/ssl.h>
#include <stdlib.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>

namespace kinference::testing {
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

TestCert MakeTestCert(const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() / "kinference-tls-XXXXXX").string();
  if (!mkdtemp(dir.data())) return {};
  TestCert c{dir + "/" + name + ".crt", dir + "/" + name + ".key",
             std::shared_ptr<void>(nullptr, [dir](void*) {
               std::error_code ec;
               std::filesystem::remove_all(dir, ec);
             })};
  std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-days 2 -subj /CN=kinference-test -addext "
      "subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      c.key_file + " -out " + c.cert_file + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return {};
  return c;
}

TlsFakeServer::TlsFakeServer(const TestCert& cert) : ssl_(asio::ssl::context::tls_server) {
  ssl_.use_certificate_chain_file(cert.cert_file);
  ssl_.use_private_key_file(cert.key_file, asio::ssl::context::pem);
  acceptor_ =
      std::make_unique<tcp::acceptor>(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  port_ = acceptor_->local_endpoint().port();
  thread_ = std::thread([this] { Serve(); });
}

TlsFakeServer::~TlsFakeServer() {
  stopping_ = true;
  boost::system::error_code ec;
  tcp::socket wake(io_);
  wake.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
  thread_.join();
}

std::string TlsFakeServer::last_authorization() const {
  std::lock_guard<std::mutex> l(mu_);
  return authorization_;
}
std::string TlsFakeServer::last_target() const {
  std::lock_guard<std::mutex> l(mu_);
  return target_;
}
std::string TlsFakeServer::last_body() const {
  std::lock_guard<std::mutex> l(mu_);
  return body_;
}
void TlsFakeServer::set_response(int status, std::string content_type, std::string body) {
  std::lock_guard<std::mutex> l(mu_);
  canned_ = true;
  canned_status_ = status;
  canned_type_ = std::move(content_type);
  canned_body_ = std::move(body);
}
void TlsFakeServer::add_response_header(std::string name, std::string value) {
  std::lock_guard<std::mutex> l(mu_);
  response_headers_.emplace_back(std::move(name), std::move(value));
}
std::string TlsFakeServer::last_header(const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [k, v] : headers_)
    if (boost::beast::iequals(k, name)) return v;
  return "";
}
std::string TlsFakeServer::last_sni() const {
  std::lock_guard<std::mutex> l(mu_);
  return sni_;
}

void TlsFakeServer::Serve() {
  while (!stopping_) {
    boost::system::error_code ec;
    tcp::socket socket(io_);
    acceptor_->accept(socket, ec);
    if (ec || stopping_) continue;
    asio::ssl::stream<tcp::socket> stream(std::move(socket), ssl_);
    stream.handshake(asio::ssl::stream_base::server, ec);
    if (ec) continue;  // e.g. the client rejected our certificate
    boost::beast::flat_buffer buffer;
    bhttp::request<bhttp::string_body> req;
    bhttp::read(stream, buffer, req, ec);
    if (ec) continue;
    ++requests_;
    {
      std::lock_guard<std::mutex> l(mu_);
      authorization_ = std::string(req[bhttp::field::authorization]);
      target_ = std::string(req.target());
      body_ = req.body();
      const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
      sni_ = sni ? sni : "";
      headers_.clear();
      for (const auto& f : req) headers_.emplace_back(f.name_string(), f.value());
    }
    bhttp::response<bhttp::string_body> res;
    res.version(11);
    res.result(status_.load());
    res.keep_alive(false);
    bool stream_requested = false;
    auto body = boost::json::parse(req.body(), ec);
    if (!ec && body.is_object()) {
      auto* s = body.as_object().if_contains("stream");
      stream_requested = s && s->is_bool() && s->as_bool();
    }
    const std::string usage =
        R"({"prompt_tokens":7,"completion_tokens":2,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":0}})";
    std::unique_lock<std::mutex> lock(mu_);
    for (const auto& [name, value] : response_headers_) res.set(name, value);
    if (canned_) {
      res.result(canned_status_);
      res.set(bhttp::field::content_type, canned_type_);
      res.body() = canned_body_;
    } else if (status_ != 200) {
      res.set(bhttp::field::content_type, "application/json");
      res.body() = R"({"error":{"message":"provider down","type":"server_error"}})";
    } else if (stream_requested) {
      res.set(bhttp::field::content_type, "text/event-stream");
      res.body() =
          R"(data: {"id":"x","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]})"
          "\n\n"
          R"(data: {"id":"x","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
          "\n\n"
          R"(data: {"id":"x","object":"chat.completion.chunk","model":"gpt-test","choices":[],"usage":)" +
          usage + "}\n\ndata: [DONE]\n\n";
    } else {
      res.set(bhttp::field::content_type, "application/json");
      res.body() =
          R"({"id":"x","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":)" +
          usage + "}";
    }
    lock.unlock();
    res.prepare_payload();
    bhttp::write(stream, res, ec);
    stream.shutdown(ec);
  }
}

}  // namespace kinference::testing
