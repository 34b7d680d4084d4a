// Internal to the HTTP library: the client's pool of idle keep-alive connections
// (http/client.h describes the promises; this is the mechanism).
//
// One ConnectionPool per io_context, as an asio service (use_service), so StartCall keeps
// its signature and connections never cross io_contexts. Idle connections are kept per
// PoolKey (host, port, tls, CA, client certificate, SNI), most recently used first, at most
// kMaxIdlePerKey per key (the oldest is closed beyond that), each for at most its idle
// timeout. While idle, a connection has a timer and a wait for readability on its socket
// pending: a server close (or any unexpected byte) while idle closes it at once. Those two
// operations are not counted as io_context work (on_work_finished after starting them,
// on_work_started in their handlers), so an io_context that is run() until it runs out of
// work still returns when only idle connections are left. Take() also peeks the socket
// (MSG_PEEK, non-blocking) and skips connections that are closed or expired.
//
// Thread-safety: all methods lock; the connections handed out belong to the io_context.
#pragma once

#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <compare>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "http/client.h"

namespace kinference::http::detail {

// What a connection was made for; only a call with the same key may reuse it.
struct PoolKey {
  std::string host;
  uint16_t port = 0;
  bool tls = false;
  std::string ca_file;
  std::string ca_pem;
  std::string client_cert_pem;  // the key goes with the certificate
  std::string sni;              // "" when none was sent (plain HTTP, IP literal)
  auto operator<=>(const PoolKey&) const = default;
};

// One client connection: the socket and, for https, the TLS stream over it.
struct Connection {
  explicit Connection(const boost::asio::any_io_executor& ex) : socket(ex), idle_timer(ex) {}
  boost::asio::ip::tcp::socket socket;
  std::shared_ptr<boost::asio::ssl::context> tls_ctx;
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls;
  // Pool bookkeeping (only while idle).
  boost::asio::steady_timer idle_timer;
  std::chrono::steady_clock::time_point idle_until{};
  uint64_t idle_generation = 0;
  bool idle = false;
};

class ConnectionPool final : public boost::asio::execution_context::service {
 public:
  using key_type = ConnectionPool;
  static boost::asio::execution_context::id id;
  // Above the concurrency a gateway sustains to one endpoint (bench-gateway drives 32 and
  // 64 connections): with 16, a third of the requests at 32 connections found no idle
  // connection and opened one (connect, and the server's accept), measured with
  // scripts/gateway_cpu.sh. Idle ones still close after their idle timeout.
  static constexpr size_t kMaxIdlePerKey = 64;

  explicit ConnectionPool(boost::asio::io_context& io);
  ~ConnectionPool() override;

  // The pool of the io_context `ex` belongs to; nullptr unless `ex` is an io_context
  // executor or a strand of one (then calls do not pool).
  static ConnectionPool* For(const boost::asio::any_io_executor& ex);

  boost::asio::io_context& io() { return io_; }
  // An idle connection for `key`, alive as far as a non-blocking peek can tell, or
  // nullptr. The caller owns it from now on.
  std::shared_ptr<Connection> Take(const PoolKey& key);
  // Keeps `conn` idle for `idle_timeout_s` (> 0) unless the pool is shutting down.
  void Put(const PoolKey& key, std::shared_ptr<Connection> conn, double idle_timeout_s);

  void CountOpened();
  void CountStaleRetry();
  ClientPoolStats counters() const;

 private:
  void shutdown() override;
  void Watch(const PoolKey& key, const std::shared_ptr<Connection>& conn);
  // The idle timer or readability wait of `conn` fired (not cancelled by Take).
  void OnIdleEvent(const PoolKey& key, const std::shared_ptr<Connection>& conn,
                   uint64_t generation);
  void RemoveLocked(const PoolKey& key, const std::shared_ptr<Connection>& conn);
  static void Close(Connection& conn);

  boost::asio::io_context& io_;
  mutable std::mutex mu_;
  std::map<PoolKey, std::deque<std::shared_ptr<Connection>>> idle_;  // newest at back
  ClientPoolStats counters_;
  bool shut_down_ = false;
};

}  // namespace kinference::http::detail
