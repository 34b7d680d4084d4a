// HTTP/1.1 server: the acceptor and the public Server API (sessions: session.h).
#include "http/server.h"

#include "http/session.h"
#include "http/tls_server.h"

namespace kinference::http {

using namespace detail;  // NOLINT: this file implements the detail classes' owner

void ServerCore::Accept() {
  if (options_.max_connections > 0 && open_sessions_ >= options_.max_connections) {
    accept_paused_ = true;  // SessionClosed resumes
    return;
  }
  acceptor_.async_accept(
      asio::make_strand(io_), [self = shared_from_this()](beast::error_code ec, tcp::socket s) {
        if (self->stopped_ || self->draining_) return;
        if (ec) {
          // E.g. out of file descriptors: retry shortly instead of spinning.
          self->retry_timer_.expires_after(std::chrono::milliseconds(50));
          self->retry_timer_.async_wait([self](beast::error_code e) {
            if (!e && !self->stopped_) self->Accept();
          });
          return;
        }
        ++self->open_sessions_;
        auto session = std::make_shared<Session>(std::move(s), self);
        std::erase_if(self->sessions_, [](const auto& w) { return w.expired(); });
        self->sessions_.push_back(session);
        session->Start();
        self->Accept();
      });
}

void ServerCore::ScheduleTlsReload() {
  const double every = options_.tls_reload_interval_s;
  if (!(every > 0) || stopped_) return;
  tls_reload_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(every)));
  tls_reload_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->stopped_) return;
    self->ReloadTlsIfChanged();
    self->ScheduleTlsReload();
  });
}

void ServerCore::ReloadTlsIfChanged() {
  TlsServerFiles files{options_.tls_cert_file, options_.tls_key_file, options_.tls_client_ca_file};
  std::string stamp = TlsFilesStamp(files);
  if (stamp == tls_stamp_) return;
  // Stamp first: a change that fails to load is reported once, not at every check; the
  // next change is tried again.
  tls_stamp_ = stamp;
  auto tls = MakeServerTlsContext(files);
  if (tls.ok()) tls_ = std::move(*tls);
  if (options_.on_tls_reload) options_.on_tls_reload(tls.status());
}

class Server::Impl : public ServerCore {
 public:
  using ServerCore::ServerCore;
};

Server::Server(asio::io_context& io, ServerOptions options)
    : impl_(std::make_shared<Impl>(io, std::move(options))) {}

Server::~Server() { Stop(); }

void Server::Route(std::string method, std::string path, Handler handler) {
  impl_->routes_[{std::move(method), std::move(path)}] = std::move(handler);
}

void Server::SetFallback(Handler handler) { impl_->fallback_ = std::move(handler); }

Result<uint16_t> Server::Start() {
  beast::error_code ec;
  const auto& o = impl_->options_;
  if (!o.tls_cert_file.empty() || !o.tls_key_file.empty()) {
    TlsServerFiles files{o.tls_cert_file, o.tls_key_file, o.tls_client_ca_file};
    std::string stamp = TlsFilesStamp(files);
    auto tls = MakeServerTlsContext(files);
    if (!tls.ok()) return tls.status();
    impl_->tls_ = std::move(*tls);
    impl_->tls_stamp_ = std::move(stamp);
    impl_->ScheduleTlsReload();
  }
  auto address = asio::ip::make_address(impl_->options_.address, ec);
  if (ec) return Status(ErrorCode::kUnavailable, "bad address " + impl_->options_.address);
  tcp::endpoint ep(address, impl_->options_.port);
  auto& a = impl_->acceptor_;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(ErrorCode::kUnavailable, "cannot listen on " + impl_->options_.address + ":" +
                                               std::to_string(impl_->options_.port) + ": " +
                                               ec.message());
  }
  impl_->stopped_ = false;
  impl_->Accept();
  return a.local_endpoint().port();
}

void Server::StopAccepting() {
  if (impl_->stopped_ || impl_->draining_) return;
  impl_->draining_ = true;
  beast::error_code ec;
  impl_->acceptor_.close(ec);
  impl_->retry_timer_.cancel();
}

size_t Server::OpenConnections() const { return impl_->open_sessions_; }

size_t Server::BufferedBodyBytes() const { return impl_->body_budget_.used(); }

size_t Server::ActiveRequests() const {
  size_t n = 0;
  for (const auto& w : impl_->sessions_) {
    if (auto s = w.lock(); s && s->in_request()) ++n;
  }
  return n;
}

void Server::Stop() {
  if (impl_->stopped_) return;
  impl_->stopped_ = true;
  beast::error_code ec;
  impl_->acceptor_.close(ec);
  impl_->retry_timer_.cancel();
  impl_->tls_reload_timer_.cancel();
  for (auto& w : impl_->sessions_) {
    if (auto s = w.lock()) s->Close();
  }
  impl_->sessions_.clear();
}

}  // namespace kinference::http
