#include "ledger/redis_limiter.h"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <functional>

#include "accounting/calendar.h"

namespace kinference::ledger {
namespace {

using accounting::Admission;
using accounting::TenantState;

// The reservation (limits.h: Refill, Exceeded, Reserve). KEYS: limits hash, concurrency
// set. ARGV: now, requests/input/output per minute, max concurrent, spend per day and
// month (-1: none), estimated input, output, cost, day and month index, request id,
// lease expiry, key ttl. Replies {admitted, requests, input, output levels ("" when not
// limited), concurrent, day spend, month spend}: the state after the reservation when
// admitted, before it otherwise.
constexpr const char* kReserveScript = R"lua(
local now = tonumber(ARGV[1])
local caps = {tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])}
local maxc, sday, smonth = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local ein, eout, ecost = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local day, month = tonumber(ARGV[11]), tonumber(ARGV[12])
local h = redis.call('HMGET', KEYS[1], 'rl', 'rt', 'il', 'it', 'ol', 'ot', 'day', 'ds', 'month', 'ms')
local lv = {}
for i = 1, 3 do
  local cap = caps[i]
  if cap >= 0 then
    local l, t = tonumber(h[2 * i - 1]), tonumber(h[2 * i])
    if l == nil or t == nil then
      l = cap
    else
      local dt = now - t
      if dt < 0 then dt = 0 end
      l = l + dt * cap / 60
      if l > cap then l = cap end
    end
    lv[i] = l
  end
end
local ds, ms = 0, 0
if tonumber(h[7]) == day then ds = tonumber(h[8]) or 0 end
if tonumber(h[9]) == month then ms = tonumber(h[10]) or 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local conc = redis.call('ZCARD', KEYS[2])
local ok = 1
if smonth >= 0 and ms + ecost > smonth then ok = 0 end
if sday >= 0 and ds + ecost > sday then ok = 0 end
if caps[1] >= 0 and lv[1] < 1 then ok = 0 end
if caps[2] >= 0 and lv[2] < ein then ok = 0 end
if caps[3] >= 0 and lv[3] < eout then ok = 0 end
if maxc >= 0 and conc >= maxc then ok = 0 end
if ok == 1 then
  if caps[1] >= 0 then lv[1] = lv[1] - 1 end
  if caps[2] >= 0 then lv[2] = lv[2] - ein end
  if caps[3] >= 0 then lv[3] = lv[3] - eout end
  ds = ds + ecost
  ms = ms + ecost
  redis.call('ZADD', KEYS[2], tonumber(ARGV[14]), ARGV[13])
  conc = conc + 1
end
local names = {'r', 'i', 'o'}
local out = {ok}
for i = 1, 3 do
  if caps[i] >= 0 then
    redis.call('HSET', KEYS[1], names[i] .. 'l', string.format('%.17g', lv[i]), names[i] .. 't', string.format('%.17g', now))
    out[i + 1] = string.format('%.17g', lv[i])
  else
    out[i + 1] = ''
  end
end
redis.call('HSET', KEYS[1], 'day', day, 'ds', string.format('%d', ds), 'month', month, 'ms', string.format('%d', ms))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[15]))
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[15]))
out[5] = conc
out[6] = string.format('%d', ds)
out[7] = string.format('%d', ms)
return out
)lua";

// The settlement (limits.h: Settle). ARGV: now, input and output per minute (-1: none),
// input and output tokens to give back (reserved - actual; negative takes more), cost
// correction (actual - reserved), the reservation's day and month, request id, key ttl.
constexpr const char* kSettleScript = R"lua(
local now = tonumber(ARGV[1])
local caps = {tonumber(ARGV[2]), tonumber(ARGV[3])}
local back = {tonumber(ARGV[4]), tonumber(ARGV[5])}
local names = {'i', 'o'}
for i = 1, 2 do
  local cap = caps[i]
  if cap >= 0 then
    local h = redis.call('HMGET', KEYS[1], names[i] .. 'l', names[i] .. 't')
    local l, t = tonumber(h[1]), tonumber(h[2])
    if l ~= nil and t ~= nil then
      local dt = now - t
      if dt < 0 then dt = 0 end
      l = l + dt * cap / 60
      if l > cap then l = cap end
      l = l + back[i]
      if l > cap then l = cap end
      if t < now then t = now end
      redis.call('HSET', KEYS[1], names[i] .. 'l', string.format('%.17g', l), names[i] .. 't', string.format('%.17g', t))
    end
  end
end
local h = redis.call('HMGET', KEYS[1], 'day', 'ds', 'month', 'ms')
local delta = tonumber(ARGV[6])
if tonumber(h[1]) == tonumber(ARGV[7]) then
  local v = (tonumber(h[2]) or 0) + delta
  if v < 0 then v = 0 end
  redis.call('HSET', KEYS[1], 'ds', string.format('%d', v))
end
if tonumber(h[3]) == tonumber(ARGV[8]) then
  local v = (tonumber(h[4]) or 0) + delta
  if v < 0 then v = 0 end
  redis.call('HSET', KEYS[1], 'ms', string.format('%d', v))
end
redis.call('ZREM', KEYS[2], ARGV[9])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[10]))
return 1
)lua";

constexpr int64_t kKeyTtlS = 40 * 86400;
constexpr int64_t kRetryAfterFailureMs = 1000;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Num(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string Cap(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-1"; }

struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

}  // namespace

// One hiredis connection with the two scripts loaded; reconnects on demand.
class RedisLimiter::Connection {
 public:
  explicit Connection(const accounting::RedisConfig& c) : config_(c) {}
  ~Connection() { Close(); }

  // A reply, or null with `error` set (the connection is closed then).
  Reply Eval(bool settle, const std::vector<std::string>& args, std::string& error) {
    if (!ctx_ && !Connect(error)) return nullptr;
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::vector<std::string> argv = {"EVALSHA", settle ? settle_sha_ : reserve_sha_, "2"};
      argv.insert(argv.end(), args.begin(), args.end());
      Reply r = Command(argv, error);
      if (!r) return nullptr;
      if (r->type == REDIS_REPLY_ERROR && std::string(r->str, r->len).starts_with("NOSCRIPT")) {
        if (!LoadScripts(error)) return nullptr;  // Redis restarted and lost them
        continue;
      }
      if (r->type == REDIS_REPLY_ERROR) {
        error = "redis: " + std::string(r->str, r->len);
        return nullptr;
      }
      return r;
    }
    error = "redis: script not found after loading";
    return nullptr;
  }

 private:
  bool Connect(std::string& error) {
    timeval tv{static_cast<time_t>(config_.timeout_ms / 1000),
               static_cast<suseconds_t>((config_.timeout_ms % 1000) * 1000)};
    ctx_ = redisConnectWithTimeout(config_.host.c_str(), config_.port, tv);
    if (!ctx_ || ctx_->err) {
      error = std::string("redis connect ") + config_.host + ":" + std::to_string(config_.port) +
              ": " + (ctx_ ? ctx_->errstr : "out of memory");
      Close();
      return false;
    }
    redisSetTimeout(ctx_, tv);
    if (!config_.password_env.empty()) {
      const char* pw = std::getenv(config_.password_env.c_str());
      if (pw) {
        Reply r = Command({"AUTH", pw}, error);
        if (!r || r->type == REDIS_REPLY_ERROR) {
          if (r) error = "redis AUTH refused";
          Close();
          return false;
        }
      }
    }
    if (config_.db != 0) {
      Reply r = Command({"SELECT", std::to_string(config_.db)}, error);
      if (!r || r->type == REDIS_REPLY_ERROR) {
        if (r) error = "redis SELECT refused";
        Close();
        return false;
      }
    }
    return LoadScripts(error);
  }

  bool LoadScripts(std::string& error) {
    for (auto [script, sha] :
         {std::pair{kReserveScript, &reserve_sha_}, std::pair{kSettleScript, &settle_sha_}}) {
      Reply r = Command({"SCRIPT", "LOAD", script}, error);
      if (!r || r->type != REDIS_REPLY_STRING) {
        if (r) error = "redis SCRIPT LOAD failed";
        Close();
        return false;
      }
      *sha = std::string(r->str, r->len);
    }
    return true;
  }

  Reply Command(const std::vector<std::string>& argv, std::string& error) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    Reply r(static_cast<redisReply*>(
        redisCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data())));
    if (!r) {
      error = std::string("redis: ") + (ctx_->errstr[0] ? ctx_->errstr : "no reply");
      Close();
    }
    return r;
  }

  void Close() {
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
  }

  const accounting::RedisConfig& config_;
  redisContext* ctx_ = nullptr;
  std::string reserve_sha_, settle_sha_;
};

RedisLimiter::RedisLimiter(accounting::RedisConfig config, double lease_s, Post post, int workers)
    : config_(std::move(config)),
      lease_s_(lease_s),
      post_(std::move(post)),
      max_pending_per_shard_(std::max<size_t>(1, kMaxPending / std::max(1, workers))) {
  for (int i = 0; i < std::max(1, workers); ++i) shards_.push_back(std::make_unique<Shard>());
  for (auto& s : shards_) s->thread = std::thread([this, &shard = *s] { Work(shard); });
}

RedisLimiter::~RedisLimiter() { Stop(); }

void RedisLimiter::Stop() {
  if (stopped_.exchange(true)) return;
  for (auto& s : shards_) {
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->stopping = true;
    }
    s->cv.notify_all();
  }
  for (auto& s : shards_)
    if (s->thread.joinable()) s->thread.join();
}

RedisLimiterStats RedisLimiter::stats() const {
  return {checks_, unavailable_, settle_dropped_, errors_, up_};
}

std::string RedisLimiter::Key(const char* kind, const std::string& tenant) const {
  return config_.key_prefix + kind + ":{" + tenant + "}";
}

void RedisLimiter::Reserve(const std::string& tenant, const accounting::TenantLimits& limits,
                           const accounting::Amounts& est, const std::string& request_id,
                           double now, Done done) {
  Job job;
  job.tenant = tenant;
  job.request_id = request_id;
  job.limits = limits;
  job.amounts = est;
  job.now = now;
  job.done = std::move(done);
  Enqueue(std::move(job));
}

void RedisLimiter::Settle(const accounting::Reservation& r, const accounting::Amounts& actual,
                          double now) {
  Job job;
  job.settle = true;
  job.tenant = r.tenant;
  job.request_id = r.request_id;
  job.reservation = r;
  job.amounts = actual;
  job.now = now;
  Enqueue(std::move(job));
}

void RedisLimiter::Enqueue(Job job) {
  // Same tenant, same worker: its jobs run in the order they were queued.
  Shard& shard = *shards_[std::hash<std::string>{}(job.tenant) % shards_.size()];
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    if (!shard.stopping && shard.jobs.size() < max_pending_per_shard_) {
      shard.jobs.push_back(std::move(job));
      shard.cv.notify_one();
      return;
    }
  }
  // Queue full or stopping: decided at once, as if Redis were unreachable.
  DecideUnavailable(job);
}

void RedisLimiter::Work(Shard& shard) {
  Connection conn(config_);
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(shard.mu);
      shard.cv.wait(lock, [&] { return shard.stopping || !shard.jobs.empty(); });
      if (shard.jobs.empty()) return;
      job = std::move(shard.jobs.front());
      shard.jobs.pop_front();
    }
    Decide(conn, job);
  }
}

void RedisLimiter::DecideUnavailable(Job& job) {
  if (job.settle) {
    settle_dropped_++;
    return;
  }
  unavailable_++;
  Admission a;
  a.unavailable = true;
  a.admitted = job.limits.on_unavailable == accounting::OnUnavailable::kFailOpen;
  a.retry_after_s = a.admitted ? 0 : static_cast<double>(kRetryAfterFailureMs) / 1000.0;
  std::optional<accounting::Reservation> r;
  // A fail-open request holds no reservation: there is nothing in Redis to settle.
  post_([done = std::move(job.done), a = std::move(a), r]() mutable {
    done(std::move(a), std::move(r));
  });
}

void RedisLimiter::Decide(Connection& conn, Job& job) {
  if (SteadyMs() < down_until_ms_) return DecideUnavailable(job);
  const std::vector<std::string> keys = {Key("limits", job.tenant), Key("concurrent", job.tenant)};
  std::vector<std::string> args = keys;
  const int64_t day = accounting::DayIndex(job.now), month = accounting::MonthIndex(job.now);
  if (job.settle) {
    const auto& r = job.reservation;
    args.insert(args.end(),
                {Num(job.now), Cap(r.limits.input_tokens_per_minute),
                 Cap(r.limits.output_tokens_per_minute),
                 std::to_string(r.reserved.input_tokens - job.amounts.input_tokens),
                 std::to_string(r.reserved.output_tokens - job.amounts.output_tokens),
                 std::to_string(job.amounts.cost - r.reserved.cost), std::to_string(r.day),
                 std::to_string(r.month), r.request_id, std::to_string(kKeyTtlS)});
  } else {
    const auto& l = job.limits;
    args.insert(
        args.end(),
        {Num(job.now), Cap(l.requests_per_minute), Cap(l.input_tokens_per_minute),
         Cap(l.output_tokens_per_minute), Cap(l.max_concurrent_requests), Cap(l.spend_per_day),
         Cap(l.spend_per_month), std::to_string(job.amounts.input_tokens),
         std::to_string(job.amounts.output_tokens), std::to_string(job.amounts.cost),
         std::to_string(day), std::to_string(month), job.request_id, Num(job.now + lease_s_),
         std::to_string(kKeyTtlS)});
  }
  std::string error;
  Reply reply = conn.Eval(job.settle, args, error);
  const bool well_formed =
      reply && (job.settle || (reply->type == REDIS_REPLY_ARRAY && reply->elements == 7));
  if (!well_formed) {
    errors_++;
    if (up_.exchange(false) || error.empty()) {
      spdlog::warn(
          "limits: Redis unreachable ({}); tenants' fail_open/fail_closed decide until it is back",
          error.empty() ? "malformed reply" : error);
    }
    down_until_ms_ = SteadyMs() + kRetryAfterFailureMs;
    return DecideUnavailable(job);
  }
  if (!up_.exchange(true))
    spdlog::info("limits: Redis {}:{} reachable", config_.host, config_.port);
  if (job.settle) return;
  checks_++;

  auto text = [&](size_t i) {
    const redisReply* e = reply->element[i];
    if (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS)
      return std::string(e->str, e->len);
    if (e->type == REDIS_REPLY_INTEGER) return std::to_string(e->integer);
    return std::string();
  };
  const bool admitted =
      reply->element[0]->type == REDIS_REPLY_INTEGER && reply->element[0]->integer == 1;
  TenantState s;
  accounting::Bucket* buckets[] = {&s.requests, &s.input, &s.output};
  for (size_t i = 0; i < 3; ++i) {
    std::string v = text(i + 1);
    if (!v.empty()) *buckets[i] = {std::strtod(v.c_str(), nullptr), job.now, true};
  }
  s.concurrent = std::strtoll(text(4).c_str(), nullptr, 10);
  s.day = day;
  s.day_spent = std::strtoll(text(5).c_str(), nullptr, 10);
  s.month = month;
  s.month_spent = std::strtoll(text(6).c_str(), nullptr, 10);

  Admission a;
  std::optional<accounting::Reservation> res;
  if (admitted) {
    a.states = accounting::States(s, job.limits, job.now);
    accounting::Reservation r;
    r.tenant = job.tenant;
    r.request_id = job.request_id;
    r.limits = job.limits;
    r.reserved = job.amounts;
    r.day = day;
    r.month = month;
    res = std::move(r);
  } else {
    a.admitted = false;
    auto exceeded = accounting::Exceeded(s, job.limits, job.amounts);
    if (!exceeded.empty()) a.exceeded = exceeded.front();
    for (auto k : exceeded) {
      a.too_large = a.too_large || accounting::TooLarge(k, job.limits, job.amounts);
      a.retry_after_s =
          std::max(a.retry_after_s, accounting::RetryAfter(s, job.limits, job.amounts, k, job.now));
    }
    a.states = accounting::States(s, job.limits, job.now);
  }
  post_([done = std::move(job.done), a = std::move(a), res = std::move(res)]() mutable {
    done(std::move(a), std::move(res));
  });
}

}  // namespace kinference::ledger
