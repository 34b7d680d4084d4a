// The gateway side of the simulation (sim/runner.h): routing with each gateway replica's
// own router, the admission queue (AdmissionOptions), retries of failed connections,
// first tokens and completions.
#include <algorithm>

#include "admission/admission.h"
#include "common/tokenizer.h"
#include "engine/chat_template.h"
#include "routing/strategy.h"
#include "sim/oracle.h"
#include "sim/runner.h"

namespace kinference::sim::internal {

Result<routing::Decision> Runner::OraclePick(Req& r, const std::vector<std::string>& candidates,
                                             double L) {
  routing::Decision d;
  d.strategy = "oracle";
  double best = kNever;
  for (const Replica& rep : replicas_) {
    if (!rep.in_router || !rep.up) continue;
    if (!candidates.empty() &&
        std::find(candidates.begin(), candidates.end(), rep.spec.id) == candidates.end())
      continue;
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

bool Runner::Saturated(const Gateway& g, size_t replica) const {
  const size_t limit = o_.admission.max_awaiting_per_endpoint;
  return limit > 0 && static_cast<size_t>(g.awaiting[replica]) >= limit;
}

void Runner::GatewayArrive(size_t idx, double L) {
  Req& r = reqs_.at(idx);
  r.gateway_arrive = now_;
  Admit(idx, L);
}

void Runner::Admit(size_t idx, double L) {
  Req& r = reqs_.at(idx);
  Gateway& g = gateways_[r.gateway];
  if (o_.admission.max_awaiting_per_endpoint == 0) return Dispatch(idx, L);
  bool open = false;
  for (size_t i = 0; i < replicas_.size() && !open; ++i)
    open = replicas_[i].in_router && g.healthy[i] && !Saturated(g, i) &&
           std::find(r.tried.begin(), r.tried.end(), replicas_[i].spec.id) == r.tried.end();
  // FIFO: nobody overtakes a request already waiting.
  if (open && g.queue.empty()) return Dispatch(idx, L);
  if (g.queue.size() >= o_.admission.max_queue) {
    r.error = "429: gateway queue full";
    q_.Push(now_, EventKind::kGatewayFinished, idx, 0);
    return;
  }
  g.queue.push_back(idx);
  q_.Push(now_ + o_.admission.max_wait_s, EventKind::kQueueTimeout, idx, ++r.queue_count);
}

std::vector<std::string> Runner::OpenCandidates(const Gateway& g, const Req& r) const {
  std::vector<std::string> open;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    if (replicas_[i].in_router && g.healthy[i] && !Saturated(g, i) &&
        std::find(r.tried.begin(), r.tried.end(), replicas_[i].spec.id) == r.tried.end())
      open.push_back(replicas_[i].spec.id);
  }
  return open;
}

// When room appears the waiter admitted is chosen by cache affinity among the first
// admission::kAffinityWindow that may go (admission/admission.h: the router's expected
// prefix-cache hit on the endpoints with room); the first waiter blocks the rest when it
// may not go (FIFO otherwise).
void Runner::DrainQueue(size_t gi, double L) {
  Gateway& g = gateways_[gi];
  while (!g.queue.empty()) {
    if (OpenCandidates(g, reqs_.at(g.queue.front())).empty()) return;
    std::vector<size_t> window;
    std::vector<double> affinity;
    std::vector<double> anywhere;
    for (size_t k = 0; k < g.queue.size() && window.size() < admission::kAffinityWindow; ++k) {
      const Req& r = reqs_.at(g.queue[k]);
      std::vector<std::string> open = OpenCandidates(g, r);
      if (open.empty()) continue;
      double hit = 0;
      for (const auto& c : g.router->Score(r.features, open, now_))
        hit = std::max(hit, c.matched_tokens);
      window.push_back(k);
      affinity.push_back(hit);
      std::vector<std::string> all;
      for (size_t i = 0; i < replicas_.size(); ++i) {
        if (replicas_[i].in_router && g.healthy[i] &&
            std::find(r.tried.begin(), r.tried.end(), replicas_[i].spec.id) == r.tried.end())
          all.push_back(replicas_[i].spec.id);
      }
      double hit_anywhere = hit;
      if (all.size() != open.size()) {
        for (const auto& c : g.router->Score(r.features, all, now_))
          hit_anywhere = std::max(hit_anywhere, c.matched_tokens);
      }
      anywhere.push_back(hit_anywhere);
    }
    Req& first = reqs_.at(g.queue.front());
    size_t pick = admission::PickByAffinity(affinity, anywhere, first.passed_over);
    if (pick != 0) ++first.passed_over;
    const size_t idx = g.queue[window[pick]];
    g.queue.erase(g.queue.begin() + static_cast<std::ptrdiff_t>(window[pick]));
    Dispatch(idx, L);
  }
}

void Runner::Dispatch(size_t idx, double L) {
  Req& r = reqs_.at(idx);
  Gateway& g = gateways_[r.gateway];
  // Candidates: every endpoint (the router's own list) unless some must be left out.
  std::vector<std::string> candidates;
  if (o_.admission.max_awaiting_per_endpoint > 0 || !r.tried.empty()) {
    for (size_t i = 0; i < replicas_.size(); ++i) {
      const Replica& rep = replicas_[i];
      if (!rep.in_router || Saturated(g, i)) continue;
      if (std::find(r.tried.begin(), r.tried.end(), rep.spec.id) != r.tried.end()) continue;
      candidates.push_back(rep.spec.id);
    }
    if (candidates.empty()) {
      r.error = r.tried.empty() ? "no endpoint" : r.error;
      q_.Push(now_, EventKind::kGatewayFinished, idx, 0);
      return;
    }
  }
  if (r.prompt.empty()) {  // a retry: the first attempt's engine took the prompt
    static const std::vector<TokenId> kGenerationPrompt =
        Tokenize(engine::ApplyChatTemplate({}, /*add_generation_prompt=*/true));
    r.prompt = live_.at(r.session).tokens;
    r.prompt.insert(r.prompt.end(), kGenerationPrompt.begin(), kGenerationPrompt.end());
  }
  Result<routing::Decision> d = o_.strategy == "oracle"
                                    ? OraclePick(r, candidates, L)
                                    : g.router->Pick(r.features, candidates, o_.strategy, now_);
  if (!d.ok()) {
    r.error = d.status().message();
    q_.Push(now_, EventKind::kGatewayFinished, idx, 0);
    return;
  }
  g.router->OnDispatched(r.features, *d, now_);
  if (r.first_dispatch < 0) r.first_dispatch = now_;
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
  if (r.replica >= 0) {
    ++g.awaiting[r.replica];
    r.awaiting_counted = true;
  }
  q_.Push(now_ + L, EventKind::kEngineArrive, idx);
}

void Runner::GatewayFirstToken(size_t idx, double L) {
  auto it = reqs_.find(idx);
  if (it == reqs_.end()) return;
  Req& r = it->second;
  gateways_[r.gateway].router->OnFirstToken(r.id, now_);
  if (r.awaiting_counted) {
    --gateways_[r.gateway].awaiting[r.replica];
    r.awaiting_counted = false;
    DrainQueue(r.gateway, L);
  }
}

void Runner::AttemptFailed(size_t idx, const std::string& why, double L) {
  auto it = reqs_.find(idx);
  if (it == reqs_.end()) return;
  Req& r = it->second;
  Gateway& g = gateways_[r.gateway];
  g.router->OnFinished(r.id, {}, routing::Outcome::kError, now_);
  if (r.awaiting_counted) {
    --g.awaiting[r.replica];
    r.awaiting_counted = false;
  }
  const size_t gi = r.gateway;
  if (r.retries < 1 && r.replica >= 0) {
    ++r.retries;
    r.tried.push_back(replicas_[r.replica].spec.id);
    r.error = why;
    r.replica = -1;
    r.first_token_gw = -1;
    r.itl.clear();
    r.reply.clear();
    Admit(idx, L);
  } else {
    r.error = why;
    GatewayFinished(idx, false, L);
  }
  DrainQueue(gi, L);
}

void Runner::GatewayFinished(size_t idx, bool ok, double L) {
  auto found = reqs_.find(idx);
  if (found == reqs_.end()) return;
  Req& r = found->second;
  LiveSession& live = live_.at(r.session);
  Gateway& g = gateways_[r.gateway];
  const size_t gi = r.gateway;
  if (r.awaiting_counted) {
    --g.awaiting[r.replica];
    r.awaiting_counted = false;
  }
  routing::Usage usage = r.usage;
  if (!o_.usage_cached_tokens) {
    usage.cached_tokens = 0;
    usage.cached_tokens_reported = false;
  }
  if (ok && !r.itl.empty()) {  // the gateway sees each streamed token
    std::vector<double> gaps = r.itl;
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    g.router->OnTokenTimings(r.id, gaps[gaps.size() / 2]);
  }
  g.router->OnFinished(r.id, usage, ok ? routing::Outcome::kSuccess : routing::Outcome::kError,
                       now_);
  const double client_end = now_ + L;
  SimRequest out;
  workload::RequestRecord& rec = out.record;
  out.session_index = r.session;
  rec.id = r.id;
  rec.session = live.session.id;
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
  out.think_s = live.session.turns[r.turn].think_time_s;
  out.gateway_wait_s = r.first_dispatch >= 0 ? r.first_dispatch - r.gateway_arrive : 0;
  out.retries = r.retries;
  out.gateway = r.gateway;
  out.bound_ttft_s = r.bound_ttft;
  out.bound_e2e_s = r.bound_e2e;
  result_.requests.push_back(std::move(out));
  last_finish_ = std::max(last_finish_, client_end);

  const workload::Session& s = live.session;
  if (ok && r.replica >= 0 && o_.strategy != "oracle" && !r.gateway_text.empty()) {
    // The gateway tells the router what the reply left in the endpoint's cache
    // (Router::OnCompletionText): this turn's messages plus the reply as an assistant
    // message, rendered as the next turn's request will be. RenderChatText is role +
    // "\n" + content + "\n" per message, so that is the request's rendering + this.
    r.gateway_text.append("assistant\n").append(r.reply).push_back('\n');
    g.router->OnCompletionText(replicas_[r.replica].spec.id,
                               routing::ChainedBlockHashes(r.gateway_text, o_.block_chars), now_);
  }
  const size_t session = r.session, turn = r.turn;
  live.replies.push_back(std::move(r.reply));
  reqs_.erase(found);
  DrainQueue(gi, L);
  if (ok && turn + 1 < s.turns.size()) {
    q_.Push(client_end + s.turns[turn + 1].think_time_s, EventKind::kClientSend, session, turn + 1);
    return;
  }
  ++sessions_done_;
  live_.erase(session);
  if (o_.concurrency > 0 && next_session_ < sessions_.size())
    q_.Push(client_end, EventKind::kClientSend, next_session_++, 0);
}

}  // namespace kinference::sim::internal
