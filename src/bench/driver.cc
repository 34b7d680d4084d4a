#include "bench/driver.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <memory>

#include "api/sse.h"
#include "http/client.h"

namespace kinference::bench {
namespace {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

// Keep at most this much of a non-200 body for the error message.
constexpr size_t kMaxErrorBody = 512;

struct InFlight {
  workload::RequestRecord record;
  std::shared_ptr<http::Call> call;
  api::SseParser parser;
  int http_status = 0;
  std::string error_body;
  std::string stream_error;
  std::string reply;
  double last_content_s = -1;
  bool done = false;  // [DONE] seen
};

class Runner {
 public:
  Runner(const std::vector<workload::Session>& sessions, const DriverOptions& opts)
      : sessions_(sessions), opts_(opts), replies_(sessions.size()) {}

  RunOutput Run() {
    t0_ = SteadyClock::now();
    if (opts_.concurrency > 0) {
      for (size_t i = 0; i < opts_.concurrency && next_ < sessions_.size(); ++i) {
        StartTurn(next_++, 0);
      }
    } else {
      for (size_t i = 0; i < sessions_.size(); ++i) {
        After(sessions_[i].arrival_s.value_or(0.0), [this, i] { StartTurn(i, 0); });
      }
    }
    io_.run();
    out_.duration_s = first_send_ >= 0 ? last_finish_ - first_send_ : 0.0;
    return std::move(out_);
  }

 private:
  double ModelNow() const {
    std::chrono::duration<double> d = SteadyClock::now() - t0_;
    return d.count() * opts_.time_scale;
  }

  // Runs `fn` after `model_s` model seconds from now (or, with from_start, from t0).
  void After(double model_s, std::function<void()> fn, bool from_start = true) {
    auto wall = std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::duration<double>(std::max(0.0, model_s) / opts_.time_scale));
    auto timer = std::make_shared<asio::steady_timer>(io_);
    timer->expires_at((from_start ? t0_ : SteadyClock::now()) + wall);
    timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code&) { fn(); });
  }

  void StartTurn(size_t i, size_t k) {
    const auto& s = sessions_[i];
    auto st = std::make_shared<InFlight>();
    st->record.id = fmt::format("{}/{}", s.id, k);
    st->record.session = s.id;
    st->record.turn = k;
    st->record.start_s = ModelNow();
    if (first_send_ < 0) first_send_ = st->record.start_s;

    http::ClientRequest req;
    req.method = "POST";
    req.host = opts_.host;
    req.port = opts_.port;
    req.target = "/v1/chat/completions";
    req.body = ChatRequestBody(s, k, replies_[i], opts_.model);
    req.headers.Add("Accept", "text/event-stream");
    if (!opts_.strategy.empty()) req.headers.Add("x-kinference-strategy", opts_.strategy);
    req.header_timeout_s = opts_.request_timeout_s / opts_.time_scale;
    req.idle_timeout_s = opts_.request_timeout_s / opts_.time_scale;

    http::ClientCallbacks cb;
    cb.on_headers = [st](int status, const http::Headers& h) {
      st->http_status = status;
      st->record.endpoint = std::string(h.Find("x-kinference-endpoint"));
      if (auto ms = h.Find("x-kinference-predicted-ttft-ms"); !ms.empty()) {
        double v = -1;
        auto [p, ec] = std::from_chars(ms.data(), ms.data() + ms.size(), v);
        if (ec == std::errc() && p == ms.data() + ms.size() && v >= 0) {
          st->record.predicted_ttft_s = v / 1000.0;
        }
      }
    };
    cb.on_data = [this, st](std::string_view data) {
      if (st->http_status != 200) {
        if (st->error_body.size() < kMaxErrorBody) {
          st->error_body.append(data.substr(0, kMaxErrorBody - st->error_body.size()));
        }
        return;
      }
      st->parser.Feed(data, [this, &st](const api::SseEvent& ev) { OnEvent(*st, ev); });
    };
    cb.on_complete = [this, st, i, k](Status status) { Finish(i, k, st, status); };
    st->call = http::StartCall(io_.get_executor(), std::move(req), std::move(cb));
  }

  void OnEvent(InFlight& st, const api::SseEvent& ev) {
    if (ev.data == "[DONE]") {
      st.done = true;
      return;
    }
    boost::system::error_code ec;
    auto v = boost::json::parse(ev.data, ec);
    if (ec || !v.is_object()) return;
    const auto& o = v.as_object();
    if (const auto* err = o.if_contains("error"); err && err->is_object()) {
      const auto* msg = err->as_object().if_contains("message");
      st.stream_error = msg && msg->is_string() ? std::string(msg->as_string()) : "stream error";
    }
    if (const auto* choices = o.if_contains("choices");
        choices && choices->is_array() && !choices->as_array().empty()) {
      const auto& c0 = choices->as_array()[0];
      const auto* delta = c0.is_object() ? c0.as_object().if_contains("delta") : nullptr;
      const auto* content =
          delta && delta->is_object() ? delta->as_object().if_contains("content") : nullptr;
      if (content && content->is_string() && !content->as_string().empty()) {
        double now = ModelNow();
        if (st.last_content_s < 0) {
          st.record.ttft_s = now - st.record.start_s;
        } else {
          st.record.itl_s.push_back(now - st.last_content_s);
        }
        st.last_content_s = now;
        st.reply.append(content->as_string().data(), content->as_string().size());
      }
    }
    if (const auto* usage = o.if_contains("usage"); usage && usage->is_object()) {
      const auto& u = usage->as_object();
      auto get = [](const boost::json::object& obj, std::string_view key) -> int64_t {
        const auto* x = obj.if_contains(key);
        return x && x->is_int64() ? x->as_int64() : (x && x->is_uint64() ? x->as_uint64() : 0);
      };
      st.record.prompt_tokens = get(u, "prompt_tokens");
      st.record.completion_tokens = get(u, "completion_tokens");
      if (const auto* d = u.if_contains("prompt_tokens_details"); d && d->is_object()) {
        st.record.cached_tokens = get(d->as_object(), "cached_tokens");
      }
    }
  }

  void Finish(size_t i, size_t k, const std::shared_ptr<InFlight>& st, const Status& status) {
    double now = ModelNow();
    auto& r = st->record;
    r.e2e_s = now - r.start_s;
    last_finish_ = std::max(last_finish_, now);
    if (!status.ok()) {
      r.error = "transport: " + status.message();
    } else if (st->http_status != 200) {
      r.error = fmt::format("HTTP {}: {}", st->http_status, st->error_body);
    } else if (!st->stream_error.empty()) {
      r.error = "stream: " + st->stream_error;
    } else if (!st->done) {
      r.error = "stream ended without [DONE]";
    } else if (r.ttft_s < 0) {
      r.error = "no content received";
    }
    bool ok = r.ok();
    if (ok) {
      if (replies_[i].size() <= k) replies_[i].resize(k + 1);
      replies_[i][k] = std::move(st->reply);
    }
    out_.records.push_back(r);
    if (opts_.on_record) opts_.on_record(out_.records.back(), out_.records.size());
    // Drop the call after its callback returned (it may still be on the stack).
    asio::post(io_, [st] { st->call.reset(); });

    const auto& s = sessions_[i];
    if (ok && k + 1 < s.turns.size()) {
      After(
          s.turns[k + 1].think_time_s, [this, i, k] { StartTurn(i, k + 1); },
          /*from_start=*/false);
      return;
    }
    replies_[i].clear();
    if (opts_.concurrency > 0 && next_ < sessions_.size()) StartTurn(next_++, 0);
  }

  const std::vector<workload::Session>& sessions_;
  const DriverOptions& opts_;
  asio::io_context io_;
  SteadyClock::time_point t0_;
  std::vector<std::vector<std::string>> replies_;  // per session, per finished turn
  size_t next_ = 0;                                // closed loop: next session to start
  double first_send_ = -1;
  double last_finish_ = 0;
  RunOutput out_;
};

}  // namespace

std::string ChatRequestBody(const workload::Session& s, size_t k,
                            const std::vector<std::string>& replies, const std::string& model) {
  boost::json::array messages;
  for (auto& m : workload::MessagesForTurn(s, k, replies)) {
    messages.push_back({{"role", m.role}, {"content", m.content}});
  }
  int max_tokens = k < s.turns.size() ? s.turns[k].max_tokens : 1;
  boost::json::object body{
      {"model", model},
      {"messages", std::move(messages)},
      {"max_tokens", max_tokens},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}},
      {"ignore_eos", true},
  };
  return boost::json::serialize(body);
}

Result<RunOutput> RunSessions(const std::vector<workload::Session>& sessions,
                              const DriverOptions& opts) {
  if (opts.time_scale <= 0) return Status(ErrorCode::kInvalidArgument, "time_scale must be > 0");
  if (opts.concurrency == 0) {
    for (const auto& s : sessions) {
      if (!s.arrival_s) {
        return Status(ErrorCode::kInvalidArgument,
                      "session " + s.id + " has no arrival time: give a rate or a concurrency");
      }
    }
  }
  Runner runner(sessions, opts);
  return runner.Run();
}

}  // namespace kinference::bench
