#include "bench/http_load.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <numeric>
#include <optional>

namespace kinference::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Shared by the workers of one run (one thread).
struct Run {
  const HttpLoadOptions& o;
  tcp::resolver::results_type endpoints;
  bhttp::request<bhttp::string_body> request;
  size_t issued = 0;  // tickets handed out, warm-up included
  std::optional<Clock::time_point> first_send;
  Clock::time_point last_end{};
  std::vector<double> first_byte_us, total_us;
  HttpLoadResult result;

  bool Measured(size_t ticket) const { return ticket >= o.warmup; }
  void Fail(size_t ticket, const std::string& what) {
    if (!Measured(ticket)) return;
    if (result.errors++ == 0) result.first_error = what;
  }
};

class Worker : public std::enable_shared_from_this<Worker> {
 public:
  Worker(asio::io_context& io, Run& run) : stream_(io), run_(run) {}

  void Next() {
    if (run_.issued >= run_.o.warmup + run_.o.requests) return;
    ticket_ = run_.issued++;
    stream_.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(run_.o.timeout_s)));
    send_ = Clock::now();
    if (run_.Measured(ticket_) && !run_.first_send) run_.first_send = send_;
    if (open_ && !run_.o.new_connection_per_request) return Write();
    if (open_) Close();
    stream_.async_connect(run_.endpoints,
                          [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                            if (ec) return self->Failed("connect: " + ec.message());
                            if (self->connected_before_) ++self->run_.result.reconnects;
                            self->connected_before_ = true;
                            self->open_ = true;
                            self->stream_.socket().set_option(tcp::no_delay(true));
                            self->Write();
                          });
  }

 private:
  void Write() {
    bhttp::async_write(stream_, run_.request,
                       [self = shared_from_this()](beast::error_code ec, size_t) {
                         if (ec) return self->Failed("write: " + ec.message());
                         self->ReadHeader();
                       });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(boost::none);
    got_body_ = false;
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               if (ec) return self->Failed("read header: " + ec.message());
                               self->ReadSome();
                             });
  }

  void ReadSome() {
    if (!got_body_ && !parser_->get().body().empty()) {
      got_body_ = true;
      first_byte_ = Clock::now();
    }
    parser_->get().body().clear();  // bytes are not kept: memory stays flat
    if (parser_->is_done()) return Done();
    bhttp::async_read_some(stream_, buffer_, *parser_,
                           [self = shared_from_this()](beast::error_code ec, size_t) {
                             if (ec) return self->Failed("read body: " + ec.message());
                             self->ReadSome();
                           });
  }

  void Done() {
    Clock::time_point end = Clock::now();
    int status = parser_->get().result_int();
    if (!got_body_) first_byte_ = end;
    if (status < 200 || status > 299) {
      run_.Fail(ticket_, "HTTP " + std::to_string(status));
    } else if (run_.Measured(ticket_)) {
      ++run_.result.requests;
      run_.first_byte_us.push_back(Us(first_byte_ - send_));
      run_.total_us.push_back(Us(end - send_));
    }
    if (run_.Measured(ticket_)) run_.last_end = std::max(run_.last_end, end);
    if (!parser_->get().keep_alive()) Close();
    Next();
  }

  void Failed(const std::string& what) {
    run_.Fail(ticket_, what);
    if (run_.Measured(ticket_)) run_.last_end = std::max(run_.last_end, Clock::now());
    Close();
    Next();
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    buffer_.clear();
    open_ = false;
  }

  beast::tcp_stream stream_;
  Run& run_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser_;
  size_t ticket_ = 0;
  Clock::time_point send_{}, first_byte_{};
  bool got_body_ = false;
  bool open_ = false;
  bool connected_before_ = false;
};

}  // namespace

LatencyStats Summarize(std::vector<double>& samples_us) {
  LatencyStats s;
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(samples_us.size()));
    return samples_us[std::min(i, samples_us.size() - 1)];
  };
  s.p50_us = rank(0.50);
  s.p90_us = rank(0.90);
  s.p99_us = rank(0.99);
  s.max_us = samples_us.back();
  s.mean_us = std::accumulate(samples_us.begin(), samples_us.end(), 0.0) /
              static_cast<double>(samples_us.size());
  return s;
}

Result<HttpLoadResult> RunHttpLoad(const HttpLoadOptions& o) {
  if (o.connections == 0 || o.requests == 0) {
    return Status(ErrorCode::kInvalidArgument, "connections and requests must be > 0");
  }
  asio::io_context io;
  Run run{o, {}, {}, 0, std::nullopt, {}, {}, {}, {}};
  beast::error_code ec;
  tcp::resolver resolver(io);
  run.endpoints = resolver.resolve(o.host, std::to_string(o.port), ec);
  if (ec) return Status(ErrorCode::kInvalidArgument, "resolve " + o.host + ": " + ec.message());
  bhttp::verb verb = bhttp::string_to_verb(o.method);
  if (verb == bhttp::verb::unknown) {
    return Status(ErrorCode::kInvalidArgument, "unknown method " + o.method);
  }
  run.request = bhttp::request<bhttp::string_body>(verb, o.path, 11);
  run.request.set(bhttp::field::host, o.host + ":" + std::to_string(o.port));
  run.request.set(bhttp::field::user_agent, "kinference-bench-http");
  if (!o.body.empty()) run.request.set(bhttp::field::content_type, "application/json");
  for (const auto& [k, v] : o.headers) run.request.set(k, v);
  run.request.keep_alive(!o.new_connection_per_request);
  run.request.body() = o.body;
  run.request.prepare_payload();
  run.first_byte_us.reserve(o.requests);
  run.total_us.reserve(o.requests);

  std::vector<std::shared_ptr<Worker>> workers;
  for (size_t i = 0; i < o.connections; ++i) {
    workers.push_back(std::make_shared<Worker>(io, run));
    workers.back()->Next();
  }
  io.run();

  HttpLoadResult r = std::move(run.result);
  if (run.first_send) {
    r.duration_s = std::chrono::duration<double>(run.last_end - *run.first_send).count();
  }
  if (r.duration_s > 0) r.requests_per_s = static_cast<double>(r.requests) / r.duration_s;
  r.first_byte = Summarize(run.first_byte_us);
  r.total = Summarize(run.total_us);
  return r;
}

}  // namespace kinference::bench
