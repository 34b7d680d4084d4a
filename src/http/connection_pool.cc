#include "http/connection_pool.h"

#include <sys/socket.h>

#include <boost/asio/strand.hpp>
#include <cerrno>

namespace kinference::http::detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

asio::execution_context::id ConnectionPool::id;

ConnectionPool::ConnectionPool(asio::io_context& io)
    : asio::execution_context::service(io), io_(io) {}

ConnectionPool::~ConnectionPool() = default;

ConnectionPool* ConnectionPool::For(const asio::any_io_executor& ex) {
  asio::io_context* io = nullptr;
  if (const auto* plain = ex.target<asio::io_context::executor_type>()) {
    io = &plain->context();
  } else if (const auto* strand = ex.target<asio::strand<asio::io_context::executor_type>>()) {
    io = &strand->get_inner_executor().context();
  }
  if (io == nullptr) return nullptr;
  return &asio::use_service<ConnectionPool>(*io);
}

namespace {

// True when the peer closed, reset, or sent bytes we did not ask for: either way the
// connection cannot carry a new request. Never blocks.
bool LooksDead(Connection& conn) {
  if (!conn.socket.is_open()) return true;
  char byte;
  ssize_t n = ::recv(conn.socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  return true;  // 0: orderly close; > 0: unexpected data (or a TLS alert) while idle
}

}  // namespace

void ConnectionPool::Close(Connection& conn) {
  boost::system::error_code ignored;
  conn.idle_timer.cancel();
  conn.socket.shutdown(tcp::socket::shutdown_both, ignored);
  conn.socket.close(ignored);
}

std::shared_ptr<Connection> ConnectionPool::Take(const PoolKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = idle_.find(key);
  if (it == idle_.end()) return nullptr;
  auto& conns = it->second;
  const auto now = std::chrono::steady_clock::now();
  std::shared_ptr<Connection> found;
  while (!conns.empty() && !found) {
    std::shared_ptr<Connection> conn = std::move(conns.back());
    conns.pop_back();
    --counters_.idle;
    conn->idle = false;
    ++conn->idle_generation;  // the pending idle handlers now do nothing
    boost::system::error_code ignored;
    conn->idle_timer.cancel();
    conn->socket.cancel(ignored);
    if (now >= conn->idle_until || LooksDead(*conn)) {
      ++counters_.closed_idle;
      Close(*conn);
      continue;
    }
    ++counters_.reused;
    found = std::move(conn);
  }
  if (conns.empty()) idle_.erase(it);
  return found;
}

void ConnectionPool::Put(const PoolKey& key, std::shared_ptr<Connection> conn,
                         double idle_timeout_s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_ || idle_timeout_s <= 0 || !conn->socket.is_open()) {
    Close(*conn);
    return;
  }
  auto& conns = idle_[key];
  while (conns.size() >= kMaxIdlePerKey) {
    std::shared_ptr<Connection> oldest = std::move(conns.front());
    conns.pop_front();
    --counters_.idle;
    ++counters_.closed_idle;
    oldest->idle = false;
    ++oldest->idle_generation;
    Close(*oldest);
  }
  conn->idle = true;
  ++conn->idle_generation;
  conn->idle_until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(idle_timeout_s));
  conns.push_back(conn);
  ++counters_.idle;
  Watch(key, conn);
}

void ConnectionPool::Watch(const PoolKey& key, const std::shared_ptr<Connection>& conn) {
  const uint64_t generation = conn->idle_generation;
  conn->idle_timer.expires_at(conn->idle_until);
  conn->idle_timer.async_wait([this, key, conn, generation](const boost::system::error_code& ec) {
    io_.get_executor().on_work_started();  // balances the on_work_finished below
    if (!ec) OnIdleEvent(key, conn, generation);
  });
  conn->socket.async_wait(tcp::socket::wait_read,
                          [this, key, conn, generation](const boost::system::error_code& ec) {
                            io_.get_executor().on_work_started();
                            if (ec != asio::error::operation_aborted) {
                              OnIdleEvent(key, conn, generation);
                            }
                          });
  // Idle connections must not keep io_context::run() from returning.
  io_.get_executor().on_work_finished();
  io_.get_executor().on_work_finished();
}

void ConnectionPool::OnIdleEvent(const PoolKey& key, const std::shared_ptr<Connection>& conn,
                                 uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!conn->idle || conn->idle_generation != generation) return;
  RemoveLocked(key, conn);
  ++counters_.closed_idle;
  conn->idle = false;
  ++conn->idle_generation;
  Close(*conn);  // cancels the other pending idle operation
}

void ConnectionPool::RemoveLocked(const PoolKey& key, const std::shared_ptr<Connection>& conn) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return;
  auto& conns = it->second;
  for (auto c = conns.begin(); c != conns.end(); ++c) {
    if (*c == conn) {
      conns.erase(c);
      --counters_.idle;
      break;
    }
  }
  if (conns.empty()) idle_.erase(it);
}

void ConnectionPool::CountOpened() {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.opened;
}

void ConnectionPool::CountStaleRetry() {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.stale_retries;
}

ClientPoolStats ConnectionPool::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void ConnectionPool::shutdown() {
  std::map<PoolKey, std::deque<std::shared_ptr<Connection>>> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
    idle.swap(idle_);
    counters_.idle = 0;
  }
  // Pending idle operations are abandoned by the io_context's own shutdown; the
  // connections they hold go with them.
  for (auto& [key, conns] : idle) {
    for (auto& conn : conns) conn->idle = false;
  }
}

}  // namespace kinference::http::detail
