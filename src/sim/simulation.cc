// The discrete-event loop of sim/simulation.h.
#include "sim/simulation.h"

#include <algorithm>
#include <boost/json.hpp>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "common/tokenizer.h"
#include "engine/chat_template.h"
#include "engine/engine.h"
#include "engine/metrics.h"
#include "gateway/request.h"
#include "routing/metrics_snapshot.h"
#include "routing/router.h"
#include "routing/strategy.h"
#include "sim/event_queue.h"
#include "sim/oracle.h"

namespace kinference::sim {
namespace {

struct Replica {
  ReplicaSpec spec;
  std::unique_ptr<engine::Engine> engine;
  uint64_t epoch = 0;  // bumped at each restart: stale step/wake events are dropped
  bool busy = false;   // a step is planned
  bool up = false;     // serving (joined, not restarting)
  bool in_router = false;
  double next_wake = kNever;
  std::unordered_set<size_t> on_engine;  // requests added and not finished
  // The last scrape: an engine whose metrics did not change renders the same text, which
  // parses to the same snapshot, so it is reused instead of rendered and parsed again.
  std::optional<engine::EngineMetrics> last_metrics;
  routing::MetricsSnapshot last_snapshot;
};

bool SameHistogram(const engine::Histogram& a, const engine::Histogram& b) {
  return a.count == b.count && a.sum == b.sum && a.counts == b.counts;
}

// True when `a` and `b` render to the same Prometheus text (every rendered field equal).
bool SameMetrics(const engine::EngineMetrics& a, const engine::EngineMetrics& b) {
  return a.num_requests_running == b.num_requests_running &&
         a.num_requests_waiting == b.num_requests_waiting &&
         a.kv_cache_usage_perc == b.kv_cache_usage_perc &&
         a.prefix_cache_queries_total == b.prefix_cache_queries_total &&
         a.prefix_cache_hits_total == b.prefix_cache_hits_total &&
         a.prompt_tokens_total == b.prompt_tokens_total &&
         a.generation_tokens_total == b.generation_tokens_total &&
         a.num_preemptions_total == b.num_preemptions_total &&
         a.request_success_total == b.request_success_total &&
         a.request_success_stop == b.request_success_stop &&
         a.request_success_length == b.request_success_length &&
         a.request_success_abort == b.request_success_abort &&
         SameHistogram(a.time_to_first_token_seconds, b.time_to_first_token_seconds) &&
         SameHistogram(a.inter_token_latency_seconds, b.inter_token_latency_seconds) &&
         SameHistogram(a.e2e_request_latency_seconds, b.e2e_request_latency_seconds) &&
         SameHistogram(a.request_queue_time_seconds, b.request_queue_time_seconds);
}

struct Req {
  size_t session = 0, turn = 0;
  std::string id;
  routing::RequestFeatures features;
  std::vector<TokenId> prompt;
  int max_tokens = 1;
  uint64_t seed = 0;
  int replica = -1;
  uint64_t epoch = 0;
  double client_send = 0, dispatched = 0, first_token_gw = -1, last_token = 0;
  std::vector<double> itl;
  std::string reply;
  routing::Usage usage;
  double predicted = -1, matched = 0, metrics_age = -1;
  std::string error;
};

struct PendingSnapshot {
  size_t replica;
  uint64_t epoch;
  routing::MetricsSnapshot snapshot;
  Seconds scraped_at;
};

class Runner {
 public:
  Runner(const std::vector<workload::Session>& sessions, const SimOptions& o)
      : sessions_(sessions),
        o_(o),
        router_(routing::RouterConfig{o.block_chars, "predicted-ttft", 5.0, o.seed}),
        rng_(o.seed ^ 0x5151u),
        replies_(sessions.size()) {
    for (const auto& spec : o.replicas) replicas_.push_back(Replica{spec});
    model_ = o.replicas.front().profile.model_name;
  }

  SimResult Run() {
    const double L = o_.network_latency_s;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      q_.Push(replicas_[i].spec.join_at_s, EventKind::kJoin, i);
      if (replicas_[i].spec.leave_at_s < kNever)
        q_.Push(replicas_[i].spec.leave_at_s, EventKind::kLeave, i);
    }
    for (size_t i = 0; i < o_.restarts.size(); ++i)
      q_.Push(o_.restarts[i].at_s, EventKind::kRestart, i);
    if (o_.concurrency > 0) {
      for (; next_session_ < std::min(o_.concurrency, sessions_.size()); ++next_session_)
        q_.Push(0, EventKind::kClientSend, next_session_, 0);
    } else {
      for (size_t s = 0; s < sessions_.size(); ++s)
        q_.Push(sessions_[s].arrival_s.value_or(0), EventKind::kClientSend, s, 0);
    }
    while (!q_.empty() && sessions_done_ < sessions_.size()) {
      Event e = q_.Pop();
      if (e.t > o_.time_limit_s) break;
      now_ = e.t;
      ++result_.events;
      Handle(e, L);
    }
    result_.duration_s = first_send_ < kNever ? std::max(0.0, last_finish_ - first_send_) : 0;
    return std::move(result_);
  }

 private:
  void Handle(const Event& e, double L) {
    switch (e.kind) {
      case EventKind::kClientSend:
        return ClientSend(e.a, e.b, L);
      case EventKind::kGatewayArrive:
        return GatewayArrive(e.a, L);
      case EventKind::kEngineArrive:
        return EngineArrive(e.a, L);
      case EventKind::kStepEnd:
        return StepEnd(e.a, e.b, L);
      case EventKind::kWake:
        if (replicas_[e.a].epoch == e.b) {
          replicas_[e.a].next_wake = kNever;
          Kick(e.a);
        }
        return;
      case EventKind::kGatewayFirstToken: {
        Req& r = reqs_[e.a];
        router_.OnFirstToken(r.id, now_);
        return;
      }
      case EventKind::kGatewayFinished:
        return GatewayFinished(e.a, e.b == 1, L);
      case EventKind::kScrape:
        return Scrape(e.a, L);
      case EventKind::kDeliverMetrics: {
        PendingSnapshot& p = snapshots_.at(e.a);
        const Replica& rep = replicas_[p.replica];
        if (rep.in_router && rep.epoch == p.epoch) {
          router_.ObserveMetrics(rep.spec.id, p.snapshot, p.scraped_at);
          ++result_.scrapes;
        }
        snapshots_.erase(e.a);
        return;
      }
      case EventKind::kJoin:
        return Join(e.a);
      case EventKind::kLeave: {
        Replica& rep = replicas_[e.a];
        if (rep.in_router) router_.RemoveEndpoint(rep.spec.id);
        rep.in_router = false;  // keeps serving what it holds; no new requests, no scrapes
        return;
      }
      case EventKind::kRestart:
        return RestartBegin(e.a, L);
      case EventKind::kRestartDone:
        return RestartEnd(e.a);
    }
  }

  double Uniform() { return static_cast<double>(routing::SplitMix64(rng_) >> 11) * 0x1.0p-53; }

  void Join(size_t i) {
    Replica& rep = replicas_[i];
    rep.engine = std::make_unique<engine::Engine>(rep.spec.profile);
    rep.up = true;
    rep.in_router = true;
    router_.AddEndpoint(routing::EndpointInfo{rep.spec.id, model_, rep.spec.pool}, now_);
    // Scrapers start at a random phase within one interval, as independent pollers do.
    q_.Push(now_ + Uniform() * o_.scrape_interval_s, EventKind::kScrape, i);
  }

  void RestartBegin(size_t k, double L) {
    auto it = std::find_if(replicas_.begin(), replicas_.end(),
                           [&](const Replica& r) { return r.spec.id == o_.restarts[k].replica; });
    if (it == replicas_.end() || !it->up) return;
    Replica& rep = *it;
    router_.SetHealthy(rep.spec.id, false);
    // The process dies: everything on it fails; the gateway sees the connections drop.
    std::vector<size_t> lost(rep.on_engine.begin(), rep.on_engine.end());
    std::sort(lost.begin(), lost.end());
    for (size_t r : lost) {
      reqs_[r].error = "replica restarted";
      by_engine_id_.erase(reqs_[r].id);
      q_.Push(now_ + L, EventKind::kGatewayFinished, r, 0);
    }
    rep.on_engine.clear();
    rep.engine.reset();
    rep.up = false;
    rep.busy = false;
    rep.next_wake = kNever;
    ++rep.epoch;
    q_.Push(now_ + o_.restarts[k].downtime_s, EventKind::kRestartDone, k);
  }

  void RestartEnd(size_t k) {
    auto it = std::find_if(replicas_.begin(), replicas_.end(),
                           [&](const Replica& r) { return r.spec.id == o_.restarts[k].replica; });
    if (it == replicas_.end() || it->up) return;
    it->engine = std::make_unique<engine::Engine>(it->spec.profile);
    it->last_metrics.reset();
    it->up = true;
    router_.ResetEndpoint(it->spec.id);
    router_.SetHealthy(it->spec.id, true);
  }

  void ClientSend(size_t s, size_t k, double L) {
    const workload::Session& session = sessions_[s];
    reqs_.emplace_back();
    size_t idx = reqs_.size() - 1;
    Req& r = reqs_.back();
    r.session = s;
    r.turn = k;
    r.id = session.id + "/" + std::to_string(k);
    r.client_send = now_;
    r.max_tokens = session.turns[k].max_tokens;
    r.seed = routing::SplitMix64(rng_);
    first_send_ = std::min(first_send_, now_);

    auto messages = workload::MessagesForTurn(session, k, replies_[s]);
    // The gateway's rendering for prefix features (gateway/request.h), from the same
    // JSON messages array the bench client sends.
    boost::json::array arr;
    engine::ChatMessages chat;
    for (auto& m : messages) {
      arr.push_back(boost::json::object{{"role", m.role}, {"content", m.content}});
      chat.emplace_back(m.role, std::move(m.content));
    }
    auto text = gateway::RenderChatText(boost::json::value(std::move(arr)));
    r.features.request_id = r.id;
    r.features.model = model_;
    r.features.max_tokens = r.max_tokens;
    if (text.ok()) {
      r.features.block_hashes = routing::ChainedBlockHashes(*text, o_.block_chars);
      r.features.prompt_chars = text->size();
    }
    // engine-sim's prompt: ChatML template, then the stand-in tokenizer.
    r.prompt = Tokenize(engine::ApplyChatTemplate(chat, /*add_generation_prompt=*/true));
    q_.Push(now_ + L, EventKind::kGatewayArrive, idx);
  }

  Result<routing::Decision> OraclePick(Req& r, double L) {
    routing::Decision d;
    d.strategy = "oracle";
    double best = kNever;
    for (const Replica& rep : replicas_) {
      if (!rep.in_router || !rep.up) continue;
      OracleInputs in;
      in.prompt_tokens = static_cast<int>(r.prompt.size());
      in.hit_tokens = rep.engine->PrefixCacheHitTokens(r.prompt);
      in.queued_prefill_tokens = rep.engine->QueuedPrefillTokens();
      in.running = rep.engine->NumRunning();
      in.max_tokens = r.max_tokens;
      const double capacity =
          static_cast<double>(rep.spec.profile.num_gpu_blocks) * rep.spec.profile.block_size;
      const double usage = rep.engine->metrics().kv_cache_usage_perc;
      in.free_kv_tokens = (1 - usage) * capacity;
      in.used_kv_tokens = usage * capacity;
      double ttft = 2 * L + OracleTtft(rep.spec.profile, in);
      routing::CandidateScore c;
      c.endpoint = rep.spec.id;
      c.predicted_ttft_s = ttft;
      c.matched_tokens = in.hit_tokens;
      c.score = ttft;
      d.candidates.push_back(c);
      if (ttft < best) {
        best = ttft;
        d.endpoint = rep.spec.id;
        d.predicted_ttft_s = ttft;
        d.matched_tokens = in.hit_tokens;
      }
    }
    if (d.candidates.empty()) return Status(ErrorCode::kUnavailable, "no healthy endpoint");
    return d;
  }

  void GatewayArrive(size_t idx, double L) {
    Req& r = reqs_[idx];
    Result<routing::Decision> d = o_.strategy == "oracle"
                                      ? OraclePick(r, L)
                                      : router_.Pick(r.features, {}, o_.strategy, now_);
    if (!d.ok()) {
      r.error = d.status().message();
      q_.Push(now_, EventKind::kGatewayFinished, idx, 0);
      return;
    }
    router_.OnDispatched(r.features, *d, now_);
    r.dispatched = now_;
    r.predicted = d->predicted_ttft_s;
    r.matched = d->matched_tokens;
    for (const auto& c : d->candidates)
      if (c.endpoint == d->endpoint) r.metrics_age = c.metrics_age_s;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (replicas_[i].spec.id == d->endpoint) {
        r.replica = static_cast<int>(i);
        r.epoch = replicas_[i].epoch;
      }
    }
    q_.Push(now_ + L, EventKind::kEngineArrive, idx);
  }

  void EngineArrive(size_t idx, double L) {
    Req& r = reqs_[idx];
    Replica& rep = replicas_[r.replica];
    if (!rep.up || rep.epoch != r.epoch) {
      r.error = "connection refused: replica down";
      q_.Push(now_ + L, EventKind::kGatewayFinished, idx, 0);
      return;
    }
    engine::EngineRequest er;
    er.id = r.id;
    er.prompt = std::move(r.prompt);
    er.max_tokens = r.max_tokens;
    er.ignore_eos = true;  // as the bench client sends (bench/driver.h)
    er.seed = r.seed;
    er.arrival = now_;
    r.prompt = {};
    Status st = rep.engine->AddRequest(std::move(er));
    if (!st.ok()) {
      r.error = st.message();
      q_.Push(now_ + L, EventKind::kGatewayFinished, idx, 0);
      return;
    }
    rep.on_engine.insert(idx);
    by_engine_id_[r.id] = idx;
    Kick(static_cast<size_t>(r.replica));
  }

  // Plans the replica's next step if it is idle; sleeps until a front-end delay ends.
  void Kick(size_t i) {
    Replica& rep = replicas_[i];
    if (rep.busy || !rep.up) return;
    if (auto d = rep.engine->PlanStep(now_)) {
      rep.busy = true;
      q_.Push(now_ + *d, EventKind::kStepEnd, i, rep.epoch);
      return;
    }
    if (!rep.engine->HasWork()) return;
    auto ready = rep.engine->NextReadyTime();
    if (ready && *ready < rep.next_wake) {
      rep.next_wake = *ready;
      q_.Push(std::max(*ready, now_), EventKind::kWake, i, rep.epoch);
    }
  }

  void StepEnd(size_t i, uint64_t epoch, double L) {
    Replica& rep = replicas_[i];
    if (rep.epoch != epoch || !rep.up) return;
    rep.busy = false;
    engine::StepOutput out = rep.engine->CompleteStep();
    for (auto& t : out.tokens) {
      auto it = by_engine_id_.find(t.request_id);
      if (it == by_engine_id_.end()) continue;
      Req& r = reqs_[it->second];
      r.reply += t.text;
      if (t.index == 0) {
        r.first_token_gw = now_ + L;
        q_.Push(now_ + L, EventKind::kGatewayFirstToken, it->second);
      } else {
        r.itl.push_back(now_ - r.last_token);
      }
      r.last_token = now_;
    }
    for (const auto& f : out.finished) {
      auto it = by_engine_id_.find(f.request_id);
      if (it == by_engine_id_.end()) continue;
      size_t idx = it->second;
      Req& r = reqs_[idx];
      by_engine_id_.erase(it);
      rep.on_engine.erase(idx);
      r.usage = routing::Usage{f.prompt_tokens, f.cached_tokens, f.completion_tokens};
      bool ok = f.reason != engine::FinishReason::kAbort;
      if (!ok) r.error = "aborted";
      q_.Push(now_ + L, EventKind::kGatewayFinished, idx, ok ? 1 : 0);
    }
    Kick(i);
  }

  void GatewayFinished(size_t idx, bool ok, double L) {
    Req& r = reqs_[idx];
    router_.OnFinished(r.id, r.usage, ok ? routing::Outcome::kSuccess : routing::Outcome::kError,
                       now_);
    const double client_end = now_ + L;
    SimRequest out;
    bench::RequestRecord& rec = out.record;
    out.session_index = r.session;
    rec.id = r.id;
    rec.session = sessions_[r.session].id;
    rec.turn = r.turn;
    rec.start_s = r.client_send;
    rec.ttft_s = r.first_token_gw >= 0 ? r.first_token_gw + L - r.client_send : -1;
    rec.itl_s = std::move(r.itl);
    rec.e2e_s = client_end - r.client_send;
    rec.prompt_tokens = r.usage.prompt_tokens;
    rec.cached_tokens = r.usage.cached_tokens;
    rec.completion_tokens = r.usage.completion_tokens;
    if (r.replica >= 0) rec.endpoint = replicas_[r.replica].spec.id;
    rec.error = ok ? std::string() : (r.error.empty() ? "failed" : r.error);
    out.predicted_ttft_s = r.predicted;
    out.gateway_ttft_s = r.first_token_gw >= 0 ? r.first_token_gw - r.dispatched : -1;
    out.matched_tokens = r.matched;
    out.metrics_age_s = r.metrics_age;
    result_.requests.push_back(std::move(out));
    last_finish_ = std::max(last_finish_, client_end);

    const workload::Session& s = sessions_[r.session];
    replies_[r.session].push_back(std::move(r.reply));
    r.features = {};
    if (ok && r.turn + 1 < s.turns.size()) {
      q_.Push(client_end + s.turns[r.turn + 1].think_time_s, EventKind::kClientSend, r.session,
              r.turn + 1);
      return;
    }
    ++sessions_done_;
    if (o_.concurrency > 0 && next_session_ < sessions_.size())
      q_.Push(client_end, EventKind::kClientSend, next_session_++, 0);
  }

  void Scrape(size_t i, double L) {
    Replica& rep = replicas_[i];
    if (!rep.in_router) return;  // left: the scraper stops
    if (rep.up) {
      // The router gets only what /metrics says: render, then parse, like the gateway.
      const engine::EngineMetrics& m = rep.engine->metrics();
      bool fresh = true;
      if (!rep.last_metrics || !SameMetrics(*rep.last_metrics, m)) {
        std::string text = engine::RenderPrometheus(m, rep.spec.profile, model_, "0");
        auto snap = routing::ParsePrometheusText(text, model_);
        fresh = snap.ok();
        if (fresh) {
          rep.last_metrics = m;
          rep.last_snapshot = std::move(*snap);
        }
      }
      if (fresh) {
        uint64_t key = next_snapshot_++;
        snapshots_.emplace(key, PendingSnapshot{i, rep.epoch, rep.last_snapshot, now_});
        q_.Push(now_ + L, EventKind::kDeliverMetrics, key);
      }
    }
    double next = o_.scrape_interval_s + (2 * Uniform() - 1) * o_.scrape_jitter_s;
    q_.Push(now_ + std::max(1e-3, next), EventKind::kScrape, i);
  }

  const std::vector<workload::Session>& sessions_;
  const SimOptions& o_;
  routing::Router router_;
  uint64_t rng_;
  std::string model_;
  EventQueue q_;
  Seconds now_ = 0;
  std::vector<Replica> replicas_;
  std::deque<Req> reqs_;
  std::unordered_map<std::string, size_t> by_engine_id_;
  std::unordered_map<uint64_t, PendingSnapshot> snapshots_;
  uint64_t next_snapshot_ = 0;
  std::vector<std::vector<std::string>> replies_;
  size_t next_session_ = 0, sessions_done_ = 0;
  double first_send_ = kNever, last_finish_ = 0;
  SimResult result_;
};

}  // namespace

std::vector<bench::RequestRecord> SimResult::Records() const {
  std::vector<bench::RequestRecord> out;
  out.reserve(requests.size());
  for (const auto& r : requests) out.push_back(r.record);
  return out;
}

std::vector<ReplicaSpec> MakePool(const engine::HardwareProfile& profile, const std::string& pool,
                                  size_t n) {
  std::vector<ReplicaSpec> out;
  for (size_t i = 0; i < n; ++i) {
    ReplicaSpec r;
    r.id = pool + "/" + std::to_string(i);
    r.pool = pool;
    r.profile = profile;
    out.push_back(std::move(r));
  }
  return out;
}

Result<SimResult> Simulate(const std::vector<workload::Session>& sessions, const SimOptions& opts) {
  if (opts.replicas.empty()) return Status(ErrorCode::kInvalidArgument, "no replicas");
  if (opts.scrape_interval_s <= 0)
    return Status(ErrorCode::kInvalidArgument, "scrape interval must be > 0");
  if (opts.strategy != "oracle" && !routing::FindStrategy(opts.strategy))
    return Status(ErrorCode::kInvalidArgument, "unknown routing strategy: " + opts.strategy);
  for (const auto& s : sessions) {
    if (s.turns.empty())
      return Status(ErrorCode::kInvalidArgument, "session " + s.id + " has no turns");
    if (opts.concurrency == 0 && !s.arrival_s)
      return Status(ErrorCode::kInvalidArgument,
                    "session " + s.id + " has no arrival time: give a rate or a concurrency");
  }
  Runner runner(sessions, opts);
  return runner.Run();
}

}  // namespace kinference::sim
