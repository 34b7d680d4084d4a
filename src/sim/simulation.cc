// The discrete-event loop of sim/simulation.h: the loop itself and the client.
#include "sim/simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>

#include "api/openai/request.h"
#include "common/tokenizer.h"
#include "engine/chat_template.h"
#include "routing/strategy.h"
#include "sim/runner.h"

namespace kinference::sim {
namespace internal {

Runner::Runner(const workload::SessionSource& sessions, const SimOptions& o)
    : sessions_(sessions), o_(o), rng_(o.seed ^ 0x5151u) {
  std::vector<engine::HardwareProfile> profiles;
  for (const auto& spec : o.replicas) {
    Replica r;
    r.spec = spec;
    replicas_.push_back(std::move(r));
    profiles.push_back(spec.profile);
  }
  model_ = o.replicas.front().profile.model_name;
  for (size_t g = 0; g < std::max<size_t>(1, o.routers); ++g) {
    Gateway gw;
    gw.router = std::make_unique<routing::Router>(routing::RouterConfig{
        o.block_chars, "predicted-ttft", 5.0, o.seed + (o.same_router_seed ? 0 : 7919 * g),
        o.learn_cost_shape, o.strategy_options});
    gw.failed_scrapes.assign(replicas_.size(), 0);
    gw.healthy.assign(replicas_.size(), true);
    gw.awaiting.assign(replicas_.size(), 0);
    gateways_.push_back(std::move(gw));
  }
  if (o.lower_bound) bound_.emplace(profiles, o.network_latency_s);
}

SimResult Runner::Run() {
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
      q_.Push(sessions_.arrival_s(s).value_or(0), EventKind::kClientSend, s, 0);
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

void Runner::Handle(const Event& e, double L) {
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
    case EventKind::kGatewayFirstToken:
      return GatewayFirstToken(e.a, L);
    case EventKind::kGatewayFinished: {
      if (e.b != 2) return GatewayFinished(e.a, e.b == 1, L);
      auto it = reqs_.find(e.a);  // failed before its first token: retryable
      if (it != reqs_.end()) AttemptFailed(e.a, it->second.error, L);
      return;
    }
    case EventKind::kScrape:
      return Scrape(e.a, e.b, L);
    case EventKind::kDeliverMetrics:
      return DeliverMetrics(e.a);
    case EventKind::kQueueTimeout: {
      auto it = reqs_.find(e.a);
      if (it == reqs_.end() || it->second.queue_count != e.b) return;
      auto& queue = gateways_[it->second.gateway].queue;
      auto pos = std::find(queue.begin(), queue.end(), e.a);
      if (pos == queue.end()) return;
      queue.erase(pos);
      it->second.error = "503: waited too long at the gateway";
      q_.Push(now_, EventKind::kGatewayFinished, e.a, 0);
      return;
    }
    case EventKind::kJoin:
      return Join(e.a);
    case EventKind::kLeave:
      return Leave(e.a);
    case EventKind::kRestart:
      return RestartBegin(e.a, L);
    case EventKind::kRestartDone:
      return RestartEnd(e.a);
    case EventKind::kDeliverKvEvents:
      return DeliverKvEvents(e.a);
  }
}

size_t Runner::GatewayOf(size_t session) {
  const size_t n = gateways_.size();
  if (n == 1) return 0;
  auto weight = [&](size_t g) {
    return o_.router_weights.empty()      ? 1.0
           : g < o_.router_weights.size() ? std::max(0.0, o_.router_weights[g])
                                          : 0.0;
  };
  double total = 0;
  for (size_t g = 0; g < n; ++g) total += weight(g);
  double u = Uniform();
  if (o_.split_by_session) {  // a fixed draw per session
    uint64_t x = session ^ (o_.seed * 0x9e3779b97f4a7c15ULL);
    u = static_cast<double>(routing::SplitMix64(x) >> 11) * 0x1.0p-53;
  }
  double acc = 0;
  for (size_t g = 0; g < n; ++g) {
    acc += weight(g);
    if (u * total < acc) return g;
  }
  return n - 1;
}

void Runner::ClientSend(size_t s, size_t k, double L) {
  if (k == 0) live_[s].session = sessions_.Get(s);
  LiveSession& live = live_[s];
  const workload::Session& session = live.session;
  const size_t idx = next_req_++;
  Req& r = reqs_[idx];
  r.session = s;
  r.turn = k;
  r.id = session.id + "/" + std::to_string(k);
  r.client_send = now_;
  r.max_tokens = session.turns[k].max_tokens;
  r.seed = routing::SplitMix64(rng_);
  first_send_ = std::min(first_send_, now_);

  auto messages = workload::MessagesForTurn(session, k, live.replies);
  // The gateway's rendering for prefix features (api/openai/request.h), from the same
  // JSON messages array the bench client sends.
  boost::json::array arr;
  engine::ChatMessages chat;
  for (auto& m : messages) {
    arr.push_back(boost::json::object{{"role", m.role}, {"content", m.content}});
    chat.emplace_back(m.role, std::move(m.content));
  }
  auto text = api::RenderChatText(boost::json::value(std::move(arr)));
  r.features.request_id = r.id;
  r.features.model = model_;
  r.features.max_tokens = r.max_tokens;
  if (text.ok()) {
    r.features.block_hashes = routing::ChainedBlockHashes(*text, o_.block_chars);
    r.features.prompt_chars = text->size();
    r.gateway_text = std::move(*text);
  }
  // engine-sim's prompt: ChatML template, then the stand-in tokenizer; equal to
  // Tokenize(ApplyChatTemplate(chat, true)) (see LiveSession::tokens).
  if (live.messages > chat.size()) {
    live.tokens.clear();
    live.messages = 0;
  }
  for (size_t i = live.messages; i < chat.size(); ++i) {
    auto seg =
        tokenizer_.Tokenize(engine::ApplyChatTemplate({chat[i]}, /*add_generation_prompt=*/false));
    live.tokens.insert(live.tokens.end(), seg.begin(), seg.end());
  }
  live.messages = chat.size();
  static const std::vector<TokenId> kGenerationPrompt =
      Tokenize(engine::ApplyChatTemplate({}, /*add_generation_prompt=*/true));
  r.prompt.reserve(live.tokens.size() + kGenerationPrompt.size());
  r.prompt = live.tokens;
  r.prompt.insert(r.prompt.end(), kGenerationPrompt.begin(), kGenerationPrompt.end());
  if (o_.kv_events) {
    // The gateway tokenizes as the served model does and cuts the engine's blocks.
    const int bs = o_.replicas.front().profile.block_size;
    r.features.engine_block_keys = hasher_.BlockKeys(r.prompt, bs);
    r.features.engine_block_size = bs;
    r.features.prompt_tokens = static_cast<int>(r.prompt.size());
  }
  r.prompt_tokens = r.prompt.size();
  if (bound_) r.chain.Append(r.prompt);
  r.gateway = GatewayOf(s);
  q_.Push(now_ + L, EventKind::kGatewayArrive, idx);
}

}  // namespace internal

std::vector<workload::RequestRecord> SimResult::Records() const {
  std::vector<workload::RequestRecord> out;
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
  return Simulate(workload::SessionSource::FromSessions(sessions), opts);
}

Result<SimResult> Simulate(const workload::SessionSource& sessions, const SimOptions& opts) {
  if (opts.replicas.empty()) return Status(ErrorCode::kInvalidArgument, "no replicas");
  if (opts.scrape_interval_s <= 0)
    return Status(ErrorCode::kInvalidArgument, "scrape interval must be > 0");
  if (opts.routers == 0 || opts.routers > 1024)
    return Status(ErrorCode::kInvalidArgument, "routers must be in [1, 1024]");
  double weights = 0;
  for (double w : opts.router_weights) {
    if (!(w >= 0)) return Status(ErrorCode::kInvalidArgument, "router weights must be >= 0");
    weights += w;
  }
  if (!opts.router_weights.empty() && !(weights > 0))
    return Status(ErrorCode::kInvalidArgument, "router weights must not all be 0");
  if (!(opts.network_latency_s >= 0) || !(opts.metrics_delay_s >= 0))
    return Status(ErrorCode::kInvalidArgument, "latencies must be >= 0");
  if (opts.strategy != "oracle" && !routing::FindStrategy(opts.strategy))
    return Status(ErrorCode::kInvalidArgument, "unknown routing strategy: " + opts.strategy);
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (sessions.turns(i) == 0)
      return Status(ErrorCode::kInvalidArgument, fmt::format("session {} has no turns", i));
    if (opts.concurrency == 0 && !sessions.arrival_s(i))
      return Status(ErrorCode::kInvalidArgument,
                    fmt::format("session {} has no arrival time: give a rate or a concurrency", i));
  }
  internal::Runner runner(sessions, opts);
  return runner.Run();
}

}  // namespace kinference::sim
