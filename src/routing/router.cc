// Router: endpoint registry, request bookkeeping and candidate views; the choice itself
// is delegated to a Strategy (routing/strategy.h).
#include "routing/router.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "routing/chars_per_token.h"
#include "routing/endpoint_state.h"
#include "routing/strategy.h"

namespace kinference::routing {

namespace {
struct InFlight {
  EndpointId endpoint;
  std::string strategy;
  std::string model;
  uint64_t seq = 0;
  Seconds dispatched_at = 0;
  TtftFeatures features;
  double matched_tokens = 0;
  std::vector<uint64_t> block_hashes;
  size_t prompt_chars = 0;
  bool first_token = false;
  Seconds first_token_at = 0;
  double context_tokens = 0;  // prompt + half the expected output (while it decodes)
  double itl_median_s = -1;   // OnTokenTimings, when given
  // Cached tokens the first token's timing implies (see OnFirstToken); < 0: unknown.
  double ttft_implied_cached = -1;
  DecodeLoad at_first_token;  // what decoded there at its first token (itself included)
};
}  // namespace

class Router::Impl {
 public:
  explicit Impl(RouterConfig c) : config(std::move(c)) {
    if (config.block_chars == 0) config.block_chars = 128;
  }

  // The engine's KV cache in tokens (cache_config_info), kDefaultCapacityTokens unknown.
  static double KvTokens(const EndpointState& e) {
    double tokens = EndpointState::kDefaultCapacityTokens;
    if (e.metrics && e.metrics->block_size && e.metrics->num_gpu_blocks)
      tokens = static_cast<double>(*e.metrics->block_size) * *e.metrics->num_gpu_blocks;
    return tokens;
  }
  // What the prefix index may hold before it forgets (LRU), in index blocks: sized
  // generously until the chars/token ratio is learned (CharsPerToken::CapacityChars).
  size_t CapacityBlocks(const EndpointState& e) const {
    double chars = Cpt(e.info.model).CapacityChars(KvTokens(e));
    return std::max<size_t>(1, static_cast<size_t>(chars / config.block_chars));
  }
  // How many index blocks the cache holds by the current estimate of the ratio (the
  // prior's before any finished request): what the eviction and fill terms measure
  // against, so that sizing the index generously does not hide a full cache.
  double RoomBlocks(const EndpointState& e) const {
    return std::max(1.0, Cpt(e.info.model).ToChars(KvTokens(e)) / config.block_chars);
  }

  const CharsPerToken& Cpt(const std::string& model) const {
    static const CharsPerToken kPrior;
    auto it = cpt.find(model);
    return it == cpt.end() ? kPrior : it->second;
  }

  Strategy* GetStrategy(std::string_view name) {
    auto it = strategies.find(name);
    if (it != strategies.end()) return it->second.get();
    auto factory = FindStrategy(name);
    if (!factory) return nullptr;
    StrategyOptions opts{config.seed, config.stale_metrics_s, config.strategy_options};
    auto s = (*factory)(opts);
    if (!s) return nullptr;
    Strategy* raw = s.get();
    strategies.emplace(std::string(name), std::move(s));
    return raw;
  }

  // True when `f` is matched against `e`'s precise (KV-event) index.
  static bool UsePrecise(const RequestFeatures& f, const EndpointState& e) {
    return e.kv_live && f.engine_block_size > 0 && !f.engine_block_keys.empty() &&
           (e.precise.block_size() == 0 || e.precise.block_size() == f.engine_block_size);
  }

  // The view of `e` for `f` at `now`.
  CandidateView View(const RequestFeatures& f, const EndpointState& e, Seconds now,
                     TtftFeatures* features_out) const {
    const CharsPerToken& ratio = Cpt(e.info.model);
    CandidateView v;
    v.info = &e.info;
    v.metrics = e.metrics ? &*e.metrics : nullptr;
    v.metrics_age_s = e.MetricsAge(now);
    v.in_flight = e.in_flight;
    v.awaiting_first_token = e.awaiting_first_token();
    double prompt_tokens = f.prompt_tokens > 0
                               ? static_cast<double>(f.prompt_tokens)
                               : ratio.ToTokens(static_cast<double>(f.prompt_chars));
    // Cache occupancy: the precise index's engine blocks against the engine's
    // num_gpu_blocks when both are known, else the approximate index's belief.
    const double room = std::min(RoomBlocks(e), static_cast<double>(e.index.capacity()));
    double free_tokens = ratio.ToTokens(std::max(0.0, room - static_cast<double>(e.index.size())) *
                                        static_cast<double>(config.block_chars));
    double fill = static_cast<double>(e.index.size()) / room;
    if (UsePrecise(f, e)) {
      v.precise = true;
      const int bs = f.engine_block_size;
      // vLLM computes at least the prompt's last token (max_cache_hit_length =
      // num_tokens - 1), so a hit covers at most (prompt_tokens - 1) / B whole blocks.
      size_t cap = prompt_tokens >= 1 ? static_cast<size_t>((prompt_tokens - 1) / bs) : 0;
      size_t blocks = std::min(e.precise.Match(f.engine_block_keys), cap);
      v.matched_tokens = static_cast<double>(blocks) * bs;
      if (e.metrics && e.metrics->num_gpu_blocks && *e.metrics->num_gpu_blocks > 0) {
        const double total = *e.metrics->num_gpu_blocks;
        const double held = static_cast<double>(e.precise.size());
        free_tokens = std::max(0.0, total - held) * bs;
        fill = held / total;
      }
    } else {
      size_t blocks = e.index.Match(f.block_hashes);
      v.matched_tokens =
          std::min(prompt_tokens, ratio.ToTokens(static_cast<double>(blocks * config.block_chars)));
      const size_t in_progress = e.InProgressBlocks(f.block_hashes, blocks);
      v.in_progress_tokens = std::min(
          v.matched_tokens, ratio.ToTokens(static_cast<double>(in_progress * config.block_chars)));
    }
    v.uncached_tokens = std::max(0.0, prompt_tokens - v.matched_tokens);
    v.evicted_tokens = std::clamp(v.uncached_tokens - free_tokens, 0.0, v.uncached_tokens);
    v.recent_reuse = reuse;
    v.index_fill = std::clamp(fill, 0.0, 1.0);
    v.cache_fill = reuse * v.index_fill;
    QueueEstimate q = e.EstimateQueue(now, config.stale_metrics_s);
    v.queued_prefill_tokens = q.total();
    v.running_seqs = q.running_seqs;
    TtftFeatures tf{q.total(), v.uncached_tokens, v.matched_tokens, q.running_seqs};
    TtftPrediction p = e.predictor.Predict(tf);
    v.predicted_ttft_s = p.ttft_s;
    v.queue_wait_s = p.queue_wait_s;
    v.fixed_cost_s = std::clamp(e.predictor.fixed_cost(), 0.0, p.ttft_s - p.queue_wait_s);
    v.output_tokens = ExpectedOutput(f);
    const double ctx = prompt_tokens + v.output_tokens / 2;
    DecodeLoad d = e.DecodingWithPending(q);
    v.decode_seqs = d.seqs;
    v.itl_s = e.decode.Itl(d.seqs + 1, d.ctx_tokens + ctx);
    v.itl_delta_s = e.decode.Marginal(ctx);
    if (features_out) *features_out = tf;
    return v;
  }

  // Speed priors from offline profiles (EndpointInfo::prefill_profile): each endpoint of
  // `model` with a known profile gets its per-token cost over the geometric mean of the
  // known ones (TtftPredictor::SetSpeedPrior): the profiles order the endpoints from the
  // first request, and the level stays the prior's until observations set it. A pool of
  // one kind keeps s = 1; the absolute profile (l40s-27b-fp8: 1.58) moved the large-prefix
  // scenario's TTFT p90 at 0.5 requests/s from 0.62 to 0.68 s (docs/routing.md).
  void SetSpeedPriors(const std::string& model) {
    double log_sum = 0;
    size_t n = 0;
    for (const auto& [id, e] : endpoints) {
      if (e->info.model != model || !e->info.prefill_profile.known()) continue;
      log_sum += std::log(e->info.prefill_profile.s_per_token);
      ++n;
    }
    if (n == 0) return;
    const double mean = std::exp(log_sum / static_cast<double>(n));
    for (auto& [id, e] : endpoints)
      if (e->info.model == model && e->info.prefill_profile.known())
        e->predictor.SetSpeedPrior(e->info.prefill_profile.s_per_token / mean);
  }

  // Output tokens a request is expected to produce: its max_tokens, unless that is far
  // above what requests have lately produced (clients often send a large cap), or the
  // recent mean when it has none.
  double ExpectedOutput(const RequestFeatures& f) const {
    if (f.max_tokens <= 0) return completion_mean;
    return std::min(static_cast<double>(f.max_tokens), 2 * completion_mean);
  }

  // Drops a request's in-flight record and its share of its endpoint's bookkeeping.
  void Forget(const std::string& request_id) {
    auto it = inflight.find(request_id);
    if (it == inflight.end()) return;
    Release(it->second);
    inflight.erase(it);
  }
  void Release(const InFlight& r) {
    auto e = endpoints.find(r.endpoint);
    if (e == endpoints.end()) return;
    e->second->RemovePending(r.seq);
    e->second->in_flight = std::max(0, e->second->in_flight - 1);
    if (r.first_token)
      e->second->own_running_ctx = std::max(0.0, e->second->own_running_ctx - r.context_tokens);
  }

  RouterConfig config;
  std::map<EndpointId, std::unique_ptr<EndpointState>> endpoints;
  std::unordered_map<std::string, CharsPerToken> cpt;  // per model
  std::map<std::string, std::unique_ptr<Strategy>, std::less<>> strategies;
  std::unordered_map<std::string, InFlight> inflight;
  uint64_t next_seq = 0;
  // How much traffic comes back for what caches hold: EWMA (weight kReuseAlpha) over
  // dispatches of the expected-hit fraction of the prompt at the chosen endpoint.
  static constexpr double kReuseAlpha = 0.05;  // memory ~20 dispatches
  double reuse = 0;
  // Completion tokens of successful requests: EWMA (weight 0.05), prior 256 (the
  // benchmark workloads' output length).
  double completion_mean = 256;
};

Router::Router(RouterConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Router::~Router() = default;

void Router::AddEndpoint(const EndpointInfo& info, Seconds now) {
  auto& slot = impl_->endpoints[info.id];
  if (slot) {
    slot->info = info;  // re-added: keep what was learned
    return;
  }
  slot = std::make_unique<EndpointState>(info, 1);
  slot->predictor = TtftPredictor(impl_->config.learn_cost_shape);
  slot->index.SetCapacity(impl_->CapacityBlocks(*slot));
  impl_->SetSpeedPriors(info.model);
}

void Router::RemoveEndpoint(const EndpointId& id) {
  std::vector<std::string> orphans;
  for (const auto& [rid, r] : impl_->inflight)
    if (r.endpoint == id) orphans.push_back(rid);
  for (const auto& rid : orphans) impl_->Forget(rid);
  impl_->endpoints.erase(id);
  for (auto& [name, s] : impl_->strategies) s->OnEndpointRemoved(id);
}

void Router::ResetEndpoint(const EndpointId& id) {
  auto it = impl_->endpoints.find(id);
  if (it == impl_->endpoints.end()) return;
  it->second->index.Clear();
  it->second->precise.Clear();
  for (auto& [name, s] : impl_->strategies) s->OnEndpointReset(id);
}

void Router::ObserveMetrics(const EndpointId& id, const MetricsSnapshot& snapshot,
                            Seconds scraped_at) {
  auto it = impl_->endpoints.find(id);
  if (it == impl_->endpoints.end()) return;
  EndpointState& e = *it->second;
  if (e.ObserveMetrics(snapshot, scraped_at)) {  // restarted: its cache is empty
    e.index.Clear();
    e.precise.Clear();
    for (auto& [name, s] : impl_->strategies) s->OnEndpointReset(id);
  }
  e.index.SetCapacity(impl_->CapacityBlocks(e));
}

void Router::SetHealthy(const EndpointId& id, bool healthy) {
  auto it = impl_->endpoints.find(id);
  if (it != impl_->endpoints.end()) it->second->healthy = healthy;
}

bool Router::CoolDown(const EndpointId& id, Seconds until, Seconds now) {
  auto it = impl_->endpoints.find(id);
  if (it == impl_->endpoints.end() || !(until > now)) return false;
  EndpointState& e = *it->second;
  const bool started = !e.CoolingAt(now);
  e.cooling_until = std::max(e.cooling_until, until);
  e.cooling = true;
  return started;
}

std::optional<Seconds> Router::CoolingUntil(const EndpointId& id, Seconds now) const {
  auto it = impl_->endpoints.find(id);
  if (it == impl_->endpoints.end() || !it->second->CoolingAt(now)) return std::nullopt;
  return it->second->cooling_until;
}

std::optional<Seconds> Router::SoonestCooldownEnd(std::span<const EndpointId> candidates,
                                                  Seconds now) const {
  std::optional<Seconds> soonest;
  for (const auto& id : candidates) {
    auto it = impl_->endpoints.find(id);
    if (it == impl_->endpoints.end() || !it->second->healthy || !it->second->CoolingAt(now))
      continue;
    if (!soonest || it->second->cooling_until < *soonest) soonest = it->second->cooling_until;
  }
  return soonest;
}

std::vector<EndpointId> Router::CooldownsEnded(Seconds now) {
  std::vector<EndpointId> out;
  for (auto& [id, e] : impl_->endpoints) {
    if (e->cooling && !e->CoolingAt(now)) {
      e->cooling = false;
      out.push_back(id);
    }
  }
  return out;
}

Result<Decision> Router::Pick(const RequestFeatures& features,
                              std::span<const EndpointId> candidates, std::string_view strategy,
                              Seconds now) {
  std::string_view name = strategy.empty() ? impl_->config.default_strategy : strategy;
  Strategy* s = impl_->GetStrategy(name);
  if (s == nullptr)
    return Status(ErrorCode::kInvalidArgument, "unknown routing strategy: " + std::string(name))
        .WithParam("strategy");

  std::vector<const EndpointState*> serving;
  if (candidates.empty()) {
    for (const auto& [id, e] : impl_->endpoints)
      if (features.model.empty() || e->info.model == features.model) serving.push_back(e.get());
  } else {
    for (const auto& id : candidates) {
      auto it = impl_->endpoints.find(id);
      if (it != impl_->endpoints.end()) serving.push_back(it->second.get());
    }
  }
  if (serving.empty())
    return Status(ErrorCode::kNotFound, "no endpoint serves model '" + features.model + "'")
        .WithParam("model");

  std::vector<CandidateView> views;
  views.reserve(serving.size());
  size_t cooling = 0;
  for (const EndpointState* e : serving) {
    if (!e->healthy) continue;
    if (e->CoolingAt(now)) {
      ++cooling;  // it asked to be left alone until cooling_until
      continue;
    }
    views.push_back(impl_->View(features, *e, now, nullptr));
  }
  if (views.empty() && cooling > 0)
    return Status(ErrorCode::kResourceExhausted,
                  "every endpoint for model '" + features.model + "' is cooling down");
  if (views.empty())
    return Status(ErrorCode::kUnavailable,
                  "no healthy endpoint for model '" + features.model + "'");

  std::vector<double> scores(views.size(), 0.0);
  size_t pick = s->Choose(features, views, scores, now);
  if (pick >= views.size())
    return Status(ErrorCode::kInternal, "strategy " + std::string(name) + " chose out of range");

  Decision d;
  d.endpoint = views[pick].info->id;
  d.strategy = std::string(name);
  d.predicted_ttft_s = views[pick].predicted_ttft_s;
  d.matched_tokens = views[pick].matched_tokens;
  d.precise = views[pick].precise;
  d.candidates.reserve(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    const CandidateView& v = views[i];
    d.candidates.push_back(CandidateScore{v.info->id, v.predicted_ttft_s, v.queue_wait_s,
                                          v.matched_tokens, v.in_flight, v.metrics_age_s, scores[i],
                                          v.precise});
  }
  return d;
}

void Router::OnDispatched(const RequestFeatures& features, const Decision& decision, Seconds now) {
  auto it = impl_->endpoints.find(decision.endpoint);
  if (it == impl_->endpoints.end()) return;
  EndpointState& e = *it->second;
  impl_->Forget(features.request_id);  // a re-dispatch replaces the earlier record

  InFlight r;
  CandidateView v = impl_->View(features, e, now, &r.features);
  r.endpoint = decision.endpoint;
  r.strategy = decision.strategy;
  r.model = e.info.model;
  r.seq = impl_->next_seq++;
  r.dispatched_at = now;
  r.matched_tokens = v.matched_tokens;
  r.block_hashes = features.block_hashes;
  r.prompt_chars = features.prompt_chars;

  const double prompt_tokens = v.matched_tokens + v.uncached_tokens;
  if (prompt_tokens > 0)
    impl_->reuse += Impl::kReuseAlpha * (v.matched_tokens / prompt_tokens - impl_->reuse);
  const size_t cached_blocks = e.index.Match(features.block_hashes);
  e.index.Insert(features.block_hashes);
  r.context_tokens = prompt_tokens + v.output_tokens / 2;
  // Its own prefill in the predictor's shape (prefill + attention, no queue, no t0): a
  // long prompt holds the queue for its attention too, not only for its tokens.
  e.AddPending(r.seq, now, v.uncached_tokens,
               TtftFeatures{0, r.features.uncached_tokens, r.features.cached_tokens, 0},
               r.context_tokens, features.block_hashes, cached_blocks);
  ++e.in_flight;
  impl_->inflight[features.request_id] = std::move(r);
  if (Strategy* s = impl_->GetStrategy(decision.strategy))
    s->OnDispatched(features, e.info.id, now);
}

void Router::OnFirstToken(const std::string& request_id, Seconds now) {
  auto it = impl_->inflight.find(request_id);
  if (it == impl_->inflight.end() || it->second.first_token) return;
  InFlight& r = it->second;
  r.first_token = true;
  r.first_token_at = now;
  auto e = impl_->endpoints.find(r.endpoint);
  if (e == impl_->endpoints.end()) return;
  e->second->RemovePending(r.seq, now);
  e->second->own_running_ctx += r.context_tokens;
  // Usage without prompt_tokens_details (vLLM's default) says nothing of the cache; the
  // TTFT does: observed past the midpoint between the predictions with the expected hit
  // and with none, the hit did not happen (the engine evicted it).
  if (r.features.cached_tokens > 0) {
    const TtftPredictor& p = e->second->predictor;
    const double hit = p.Predict(r.features).ttft_s;
    TtftFeatures cold = r.features;
    cold.uncached_tokens += cold.cached_tokens;
    cold.cached_tokens = 0;
    const double miss = p.Predict(cold).ttft_s;
    const double observed = now - r.dispatched_at;
    r.ttft_implied_cached =
        miss > hit && observed > (hit + miss) / 2 ? 0.0 : r.features.cached_tokens;
  }
  r.at_first_token =
      e->second->Decoding(e->second->EstimateQueue(now, impl_->config.stale_metrics_s));
  // Endpoints of one pool serve one model on the same hardware: they share what is
  // learned, so a few unlucky observations cannot make one replica look slow and starve
  // it of the traffic that would correct it.
  const EndpointInfo& info = e->second->info;
  for (auto& [id, other] : impl_->endpoints)
    if (other->info.pool == info.pool && other->info.model == info.model)
      other->predictor.Observe(r.features, now - r.dispatched_at);
}

void Router::OnFinished(const std::string& request_id, const Usage& usage, Outcome outcome,
                        Seconds now) {
  auto it = impl_->inflight.find(request_id);
  if (it == impl_->inflight.end()) return;
  InFlight r = std::move(it->second);
  impl_->inflight.erase(it);
  auto e = impl_->endpoints.find(r.endpoint);
  if (e != impl_->endpoints.end() && r.first_token) {
    // What decoded next to it, averaged over its first token and its end (itself
    // included), against the mean ITL it saw.
    EndpointState& ep = *e->second;
    DecodeLoad end = ep.Decoding(ep.EstimateQueue(now, impl_->config.stale_metrics_s));
    if (outcome == Outcome::kSuccess && usage.completion_tokens >= 2 && now > r.first_token_at) {
      const double itl = r.itl_median_s > 0
                             ? r.itl_median_s
                             : (now - r.first_token_at) / (usage.completion_tokens - 1);
      const double seqs = (r.at_first_token.seqs + end.seqs) / 2;
      const double ctx = (r.at_first_token.ctx_tokens + end.ctx_tokens) / 2;
      const EndpointInfo& info = ep.info;
      for (auto& [id, other] : impl_->endpoints)
        if (other->info.pool == info.pool && other->info.model == info.model)
          other->decode.Observe(seqs, ctx, itl);
    }
  }
  if (outcome == Outcome::kSuccess && usage.completion_tokens > 0)
    impl_->completion_mean += 0.05 * (usage.completion_tokens - impl_->completion_mean);
  impl_->Release(r);
  if (e == impl_->endpoints.end()) return;
  EndpointState& ep = *e->second;
  if (outcome == Outcome::kSuccess && usage.prompt_tokens > 0 && r.prompt_chars > 0) {
    impl_->cpt[r.model].Observe(r.prompt_chars, usage.prompt_tokens);
    // The engine cached much less than the index believed: it evicted the rest of this
    // chain, so forget it. Tolerance: two engine blocks (16 tokens each by vLLM default
    // when unknown) or 10% of the belief, for the ratio's and block rounding's error.
    double block = ep.metrics && ep.metrics->block_size ? *ep.metrics->block_size : 16.0;
    double tolerance = std::max(2 * block, 0.1 * r.matched_tokens);
    const double cached =
        usage.cached_tokens_reported ? usage.cached_tokens : r.ttft_implied_cached;
    if (cached >= 0 && cached + tolerance < r.matched_tokens) {
      double chars_per_token =
          static_cast<double>(r.prompt_chars) / static_cast<double>(usage.prompt_tokens);
      size_t keep = static_cast<size_t>(cached * chars_per_token /
                                        static_cast<double>(impl_->config.block_chars));
      ep.index.Trim(r.block_hashes, keep);
    }
    ep.index.SetCapacity(impl_->CapacityBlocks(ep));
  }
  if (Strategy* s = impl_->GetStrategy(r.strategy))
    s->OnFinished(request_id, r.endpoint, usage, outcome, now);
}

void Router::OnTokenTimings(const std::string& request_id, double itl_median_s) {
  auto it = impl_->inflight.find(request_id);
  if (it != impl_->inflight.end() && std::isfinite(itl_median_s))
    it->second.itl_median_s = itl_median_s;
}

void Router::OnCompletionText(const EndpointId& endpoint, std::span<const uint64_t> block_hashes,
                              Seconds) {
  auto it = impl_->endpoints.find(endpoint);
  if (it == impl_->endpoints.end() || block_hashes.size() < 2) return;
  it->second->index.Insert(block_hashes.first(block_hashes.size() - 1));
}

void Router::OnKvEvents(const EndpointId& id, const kv::EventBatch& batch) {
  auto it = impl_->endpoints.find(id);
  if (it == impl_->endpoints.end()) return;
  it->second->precise.Apply(batch);
  ++it->second->kv_batches;
}

void Router::ClearKvEvents(const EndpointId& id) {
  auto it = impl_->endpoints.find(id);
  if (it == impl_->endpoints.end()) return;
  it->second->precise.Clear();
  ++it->second->kv_clears;
}

void Router::SetKvEventsLive(const EndpointId& id, bool live) {
  auto it = impl_->endpoints.find(id);
  if (it != impl_->endpoints.end()) it->second->kv_live = live;
}

std::optional<KvIndexStats> Router::KvIndex(const EndpointId& id) const {
  auto it = impl_->endpoints.find(id);
  if (it == impl_->endpoints.end()) return std::nullopt;
  const EndpointState& e = *it->second;
  return KvIndexStats{e.kv_live, e.precise.size(), e.precise.block_size(), e.kv_batches,
                      e.kv_clears};
}

std::vector<std::string> Router::StrategyNames() const { return RegisteredStrategyNames(); }

std::vector<EndpointInfo> Router::Endpoints() const {
  std::vector<EndpointInfo> out;
  for (const auto& [id, e] : impl_->endpoints) out.push_back(e->info);
  return out;
}

std::vector<CandidateScore> Router::Score(const RequestFeatures& features,
                                          std::span<const EndpointId> candidates,
                                          Seconds now) const {
  std::vector<CandidateScore> out;
  out.reserve(candidates.size());
  for (const auto& id : candidates) {
    auto it = impl_->endpoints.find(id);
    if (it == impl_->endpoints.end() || !it->second->healthy || it->second->CoolingAt(now))
      continue;
    CandidateView v = impl_->View(features, *it->second, now, nullptr);
    out.push_back(CandidateScore{v.info->id, v.predicted_ttft_s, v.queue_wait_s, v.matched_tokens,
                                 v.in_flight, v.metrics_age_s, 0.0, v.precise});
  }
  return out;
}

}  // namespace kinference::routing
