// Test helpers for TLS: a throwaway self-signed certificate made at test time with the
// openssl CLI (never committed; the key lives in a temp directory) and a tiny HTTPS
// server on Beast that plays an OpenAI-compatible provider: it records what it was sent
// (Authorization, target, body, SNI, any header) and answers chat completions with
// `status`, or with a canned response (set_response) to play another API.
//
// Thread-safety: the server runs its own thread; accessors lock.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kinference::testing {

struct TestCert {
  std::string cert_file;          // PEM certificate (self-signed, CA:TRUE), usable as a ca_file
  std::string key_file;           // PEM private key
  std::shared_ptr<void> cleanup;  // removes the temp directory with the last copy
};

// A certificate for IP 127.0.0.1 and DNS localhost under a fresh temp directory.
// Empty paths when the openssl CLI failed.
TestCert MakeTestCert(const std::string& name);

class TlsFakeServer {
 public:
  explicit TlsFakeServer(const TestCert& cert);
  ~TlsFakeServer();
  uint16_t port() const { return port_; }
  void set_status(int status) { status_ = status; }
  // Answers every request with exactly this status, content type and body.
  void set_response(int status, std::string content_type, std::string body);
  // Adds a header to every response from now on.
  void add_response_header(std::string name, std::string value);
  int requests() const { return requests_; }
  std::string last_authorization() const;
  std::string last_target() const;
  std::string last_body() const;
  std::string last_sni() const;
  std::string last_header(const std::string& name) const;  // "" when absent

 private:
  void Serve();

  boost::asio::io_context io_;
  boost::asio::ssl::context ssl_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  uint16_t port_ = 0;
  std::atomic<int> status_{200};
  std::atomic<int> requests_{0};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::string authorization_, target_, body_, sni_;
  std::vector<std::pair<std::string, std::string>> headers_;
  bool canned_ = false;
  int canned_status_ = 200;
  std::string canned_type_, canned_body_;
  std::vector<std::pair<std::string, std::string>> response_headers_;
  std::thread thread_;
};

}  // namespace kinference::testing
