// The discrete-event loop of sim/simulation.h: the loop itself, the client and the gateway.
#include "sim/simulation.h"

#include <algorithm>
#include <boost/json.hpp>

#include "api/openai/request.h"
#include "common/tokenizer.h"
#include "engine/chat_template.h"
#include "routing/strategy.h"
#include "sim/oracle.h"
#include "sim/runner.h"

namespace kinference::sim {
namespace internal {

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
    case EventKind::kDeliverKvEvents:
      return DeliverKvEvents(e.a);
  }
}

void Runner::ClientSend(size_t s, size_t k, double L) {
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
  // Tokenize(ApplyChatTemplate(chat, true)) (see session_tokens_).
  SessionTokens& st = session_tokens_[s];
  if (st.messages > chat.size()) st = {};
  for (size_t i = st.messages; i < chat.size(); ++i) {
    auto seg = Tokenize(engine::ApplyChatTemplate({chat[i]}, /*add_generation_prompt=*/false));
    st.tokens.insert(st.tokens.end(), seg.begin(), seg.end());
  }
  st.messages = chat.size();
  static const std::vector<TokenId> kGenerationPrompt =
      Tokenize(engine::ApplyChatTemplate({}, /*add_generation_prompt=*/true));
  r.prompt.reserve(st.tokens.size() + kGenerationPrompt.size());
  r.prompt = st.tokens;
  r.prompt.insert(r.prompt.end(), kGenerationPrompt.begin(), kGenerationPrompt.end());
  if (o_.kv_events) {
    // The gateway tokenizes as the served model does and cuts the engine's blocks.
    const int bs = o_.replicas.front().profile.block_size;
    r.features.engine_block_keys = hasher_.BlockKeys(r.prompt, bs);
    r.features.engine_block_size = bs;
    r.features.prompt_tokens = static_cast<int>(r.prompt.size());
  }
  q_.Push(now_ + L, EventKind::kGatewayArrive, idx);
}

Result<routing::Decision> Runner::OraclePick(Req& r, double L) {
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

void Runner::GatewayArrive(size_t idx, double L) {
  Req& r = reqs_[idx];
  Result<routing::Decision> d =
      o_.strategy == "oracle" ? OraclePick(r, L) : router_.Pick(r.features, {}, o_.strategy, now_);
  if (!d.ok()) {
    r.error = d.status().message();
    q_.Push(now_, EventKind::kGatewayFinished, idx, 0);
    return;
  }
  router_.OnDispatched(r.features, *d, now_);
  r.dispatched = now_;
  r.predicted = d->predicted_ttft_s;
  r.matched = d->matched_tokens;
  r.precise = d->precise;
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

void Runner::GatewayFinished(size_t idx, bool ok, double L) {
  Req& r = reqs_[idx];
  router_.OnFinished(r.id, r.usage, ok ? routing::Outcome::kSuccess : routing::Outcome::kError,
                     now_);
  const double client_end = now_ + L;
  SimRequest out;
  workload::RequestRecord& rec = out.record;
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
  out.precise = r.precise;
  out.think_s = sessions_[r.session].turns[r.turn].think_time_s;
  result_.requests.push_back(std::move(out));
  last_finish_ = std::max(last_finish_, client_end);

  const workload::Session& s = sessions_[r.session];
  if (ok && r.replica >= 0 && o_.strategy != "oracle" && !r.gateway_text.empty()) {
    // The gateway tells the router what the reply left in the endpoint's cache
    // (Router::OnCompletionText): this turn's messages plus the reply as an assistant
    // message, rendered as the next turn's request will be. RenderChatText is role +
    // "\n" + content + "\n" per message, so that is the request's rendering + this.
    r.gateway_text.append("assistant\n").append(r.reply).push_back('\n');
    router_.OnCompletionText(replicas_[r.replica].spec.id,
                             routing::ChainedBlockHashes(r.gateway_text, o_.block_chars), now_);
  }
  r.gateway_text = {};
  replies_[r.session].push_back(std::move(r.reply));
  r.features = {};
  if (ok && r.turn + 1 < s.turns.size()) {
    q_.Push(client_end + s.turns[r.turn + 1].think_time_s, EventKind::kClientSend, r.session,
            r.turn + 1);
    return;
  }
  ++sessions_done_;
  session_tokens_[r.session] = {};
  if (o_.concurrency > 0 && next_session_ < sessions_.size())
    q_.Push(client_end, EventKind::kClientSend, next_session_++, 0);
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
  internal::Runner runner(sessions, opts);
  return runner.Run();
}

}  // namespace kinference::sim
