// The replica side of the simulation (sim/runner.h): engines stepped on the virtual clock,
// /metrics scrapes, and joins, leaves and restarts.
#include <algorithm>

#include "routing/strategy.h"
#include "sim/runner.h"

namespace kinference::sim::internal {
namespace {

// What offline profiling of this replica's prefill would measure (the peers whose designs
// have one use it: EndpointInfo::prefill_profile): its cost model's per-token and
// per-pair terms, the step overhead spread over a full chunk.
routing::PrefillProfile OfflineProfile(const engine::HardwareProfile& p) {
  const double chunk = std::max(1, p.max_num_batched_tokens);
  return routing::PrefillProfile{p.prefill_s_per_token + p.step_overhead_s / chunk,
                                 p.attn_s_per_token_ctx};
}

}  // namespace

routing::MetricsSnapshot SnapshotOf(const engine::EngineMetrics& m,
                                    const engine::HardwareProfile& p) {
  routing::MetricsSnapshot s;
  s.num_requests_running = m.num_requests_running;
  s.num_requests_waiting = m.num_requests_waiting;
  s.kv_cache_usage_perc = m.kv_cache_usage_perc;
  s.prefix_cache_queries_total = static_cast<double>(m.prefix_cache_queries_total);
  s.prefix_cache_hits_total = static_cast<double>(m.prefix_cache_hits_total);
  s.prompt_tokens_total = static_cast<double>(m.prompt_tokens_total);
  s.generation_tokens_total = static_cast<double>(m.generation_tokens_total);
  s.num_preemptions_total = static_cast<double>(m.num_preemptions_total);
  s.ttft_seconds_sum = m.time_to_first_token_seconds.sum;
  s.ttft_seconds_count = static_cast<double>(m.time_to_first_token_seconds.count);
  s.block_size = p.block_size;
  s.num_gpu_blocks = p.num_gpu_blocks;
  return s;
}

double Runner::Uniform() {
  return static_cast<double>(routing::SplitMix64(rng_) >> 11) * 0x1.0p-53;
}

void Runner::Join(size_t i) {
  Replica& rep = replicas_[i];
  rep.engine = std::make_unique<engine::Engine>(rep.spec.profile);
  rep.up = true;
  rep.in_router = true;
  // Discovery (a config change, an EndpointSlice update) tells every gateway replica.
  for (size_t g = 0; g < gateways_.size(); ++g) {
    gateways_[g].router->AddEndpoint(
        routing::EndpointInfo{rep.spec.id, model_, rep.spec.pool, OfflineProfile(rep.spec.profile)},
        now_);
    if (o_.kv_events)  // subscribed from the start
      gateways_[g].router->SetKvEventsLive(rep.spec.id, true);
    gateways_[g].healthy[i] = true;
    gateways_[g].failed_scrapes[i] = 0;
    // Scrapers start at a random phase within one interval, as independent pollers do.
    q_.Push(now_ + Uniform() * o_.scrape_interval_s, EventKind::kScrape, i, g);
  }
  for (size_t g = 0; g < gateways_.size(); ++g) DrainQueue(g, o_.network_latency_s);
}

void Runner::Leave(size_t i) {
  Replica& rep = replicas_[i];
  if (rep.in_router)
    for (auto& g : gateways_) g.router->RemoveEndpoint(rep.spec.id);
  rep.in_router = false;  // keeps serving what it holds; no new requests, no scrapes
}

void Runner::RestartBegin(size_t k, double L) {
  auto it = std::find_if(replicas_.begin(), replicas_.end(),
                         [&](const Replica& r) { return r.spec.id == o_.restarts[k].replica; });
  if (it == replicas_.end() || !it->up) return;
  Replica& rep = *it;
  // Its KV-event publisher dies with it: the subscribers see the disconnect.
  if (o_.kv_events)
    for (auto& g : gateways_) g.router->SetKvEventsLive(rep.spec.id, false);
  // The process dies: everything on it fails; the gateways see the connections drop (a
  // request without a first token yet is retried once elsewhere, as the gateway does).
  // Nobody announces it: the gateways find out from failed connections and scrapes.
  std::vector<size_t> lost(rep.on_engine.begin(), rep.on_engine.end());
  std::sort(lost.begin(), lost.end());
  for (size_t r : lost) {
    Req& req = reqs_.at(r);
    req.error = "replica restarted";
    by_engine_id_.erase(req.id);
    q_.Push(now_ + L, EventKind::kGatewayFinished, r, req.first_token_seen ? 0 : 2);
  }
  rep.on_engine.clear();
  rep.engine.reset();
  rep.up = false;
  rep.busy = false;
  rep.next_wake = kNever;
  ++rep.epoch;
  q_.Push(now_ + o_.restarts[k].downtime_s, EventKind::kRestartDone, k);
}

void Runner::RestartEnd(size_t k) {
  auto it = std::find_if(replicas_.begin(), replicas_.end(),
                         [&](const Replica& r) { return r.spec.id == o_.restarts[k].replica; });
  if (it == replicas_.end() || it->up) return;
  // A fresh process: empty KV cache, counters from zero. The gateways learn it from
  // their next scrapes (healthy again; counters gone backwards clear the prefix index).
  it->engine = std::make_unique<engine::Engine>(it->spec.profile);
  it->up = true;
  it->kv_seq = 0;
  // engine-sim's new publisher opens with AllBlocksCleared (sequence 0); the feed is live
  // again when it arrives (a KV-event subscriber learns of the restart that way).
  if (o_.kv_events)
    PublishKvEvents(static_cast<size_t>(it - replicas_.begin()), {kv::AllBlocksCleared{}},
                    o_.network_latency_s);
}

void Runner::EngineArrive(size_t idx, double L) {
  Req& r = reqs_.at(idx);
  Replica& rep = replicas_[r.replica];
  if (!rep.up || rep.epoch != r.epoch) {
    r.error = "connection refused: replica down";
    q_.Push(now_ + L, EventKind::kGatewayFinished, idx, 2);
    return;
  }
  if (bound_ && r.bound_ttft < 0) {
    // Before its own blocks count: everything that reached an engine before it.
    LowerBound::Bounds b = bound_->Of(r.chain, r.prompt_tokens, r.max_tokens);
    r.bound_ttft = b.ttft_s;
    r.bound_e2e = b.e2e_s;
    bound_->Record(r.chain.hashes);
    r.chain_recorded = r.chain.hashes.size();
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
void Runner::Kick(size_t i) {
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

void Runner::StepEnd(size_t i, uint64_t epoch, double L) {
  Replica& rep = replicas_[i];
  if (rep.epoch != epoch || !rep.up) return;
  rep.busy = false;
  engine::StepOutput out = rep.engine->CompleteStep();
  if (o_.kv_events && !out.kv_events.empty()) PublishKvEvents(i, std::move(out.kv_events), L);
  for (auto& t : out.tokens) {
    auto it = by_engine_id_.find(t.request_id);
    if (it == by_engine_id_.end()) continue;
    Req& r = reqs_.at(it->second);
    r.reply += t.text;
    if (bound_) r.chain.Append(std::span<const TokenId>(&t.token, 1));
    if (t.index == 0) {
      r.first_token_seen = true;
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
    Req& r = reqs_.at(idx);
    by_engine_id_.erase(it);
    rep.on_engine.erase(idx);
    r.usage = routing::Usage{f.prompt_tokens, f.cached_tokens, f.completion_tokens};
    if (bound_ && r.chain.hashes.size() > r.chain_recorded) {
      bound_->Record(std::span<const uint64_t>(r.chain.hashes).subspan(r.chain_recorded));
      r.chain_recorded = r.chain.hashes.size();
    }
    bool ok = f.reason != engine::FinishReason::kAbort;
    if (!ok) r.error = "aborted";
    q_.Push(now_ + L, EventKind::kGatewayFinished, idx, ok ? 1 : 0);
  }
  Kick(i);
}

void Runner::Scrape(size_t i, size_t gi, double L) {
  Replica& rep = replicas_[i];
  if (!rep.in_router) return;  // left: the scraper stops
  Gateway& g = gateways_[gi];
  if (rep.up) {
    // The router gets only what /metrics says (SnapshotOf: what parsing the rendered
    // page gives, without the text).
    uint64_t key = next_snapshot_++;
    snapshots_.emplace(
        key, PendingSnapshot{i, gi, rep.epoch, SnapshotOf(rep.engine->metrics(), rep.spec.profile),
                             now_});
    q_.Push(now_ + L + o_.metrics_delay_s, EventKind::kDeliverMetrics, key);
  } else if (++g.failed_scrapes[i] >= kUnhealthyAfterFailures && g.healthy[i]) {
    // Connection refused, as gateway/upstream/scraper.cc sees a dead pod.
    g.healthy[i] = false;
    g.router->SetHealthy(rep.spec.id, false);
  }
  double next = o_.scrape_interval_s + (2 * Uniform() - 1) * o_.scrape_jitter_s;
  q_.Push(now_ + std::max(1e-3, next), EventKind::kScrape, i, gi);
}

void Runner::DeliverMetrics(uint64_t key) {
  auto it = snapshots_.find(key);
  if (it == snapshots_.end()) return;
  const PendingSnapshot& p = it->second;
  const Replica& rep = replicas_[p.replica];
  Gateway& g = gateways_[p.gateway];
  if (rep.in_router && rep.epoch == p.epoch) {
    g.router->ObserveMetrics(rep.spec.id, p.snapshot, p.scraped_at);
    ++result_.scrapes;
    g.failed_scrapes[p.replica] = 0;
    if (!g.healthy[p.replica]) {
      g.healthy[p.replica] = true;
      g.router->SetHealthy(rep.spec.id, true);
    }
  }
  const size_t gi = p.gateway;
  snapshots_.erase(it);
  DrainQueue(gi, o_.network_latency_s);
}

void Runner::PublishKvEvents(size_t i, std::vector<kv::KvEvent> events, double L) {
  Replica& rep = replicas_[i];
  uint64_t key = next_kv_batch_++;
  PendingKvBatch p{i, rep.epoch, kv::EventBatch{now_, std::move(events), 0}};
  ++rep.kv_seq;
  kv_batches_.emplace(key, std::move(p));
  q_.Push(now_ + L, EventKind::kDeliverKvEvents, key);
}

void Runner::DeliverKvEvents(uint64_t key) {
  auto it = kv_batches_.find(key);
  if (it == kv_batches_.end()) return;
  const Replica& rep = replicas_[it->second.replica];
  // In order (equal latencies), none lost: the gateway's EventStream (kv/event_stream.h)
  // would apply each as it comes. A batch from before a restart is dropped with its
  // process.
  if (rep.in_router && rep.up && rep.epoch == it->second.epoch) {
    for (auto& g : gateways_) {  // every gateway replica subscribes to every engine
      g.router->OnKvEvents(rep.spec.id, it->second.batch);
      g.router->SetKvEventsLive(rep.spec.id, true);
    }
    ++result_.kv_batches;
  }
  kv_batches_.erase(it);
}

}  // namespace kinference::sim::internal
