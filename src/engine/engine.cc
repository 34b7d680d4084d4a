#include "engine/engine.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include "engine/engine_impl.h"

namespace kinference::engine {
namespace {

// Mean length of a reply that ends on its own (tokens): the mean output length of the
// Mooncake conversation trace (FAST'25 release, 343 tokens; data/traces/README.md).
constexpr double kMeanNaturalOutputTokens = 343;

// Output count at which a request samples EOS, fixed by seed: exponentially distributed
// with mean kMeanNaturalOutputTokens, at least 1, capped at max_tokens (so a request
// without a max_tokens cap still ends after a few hundred tokens, as chat replies do).
int EosPosition(uint64_t seed, int max_tokens) {
  const uint64_t key[2] = {seed, 0x454f53u};  // "EOS": separates it from the word stream
  // Uniform in (0, 1) from the top 53 bits.
  double u = (static_cast<double>(XXH3_64bits(key, sizeof(key)) >> 11) + 0.5) * 0x1.0p-53;
  double n = std::ceil(-std::log(u) * kMeanNaturalOutputTokens);
  return static_cast<int>(std::clamp(n, 1.0, static_cast<double>(max_tokens)));
}

}  // namespace

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kAbort:
      return "abort";
  }
  return "abort";
}

Engine::Impl::Impl(HardwareProfile profile)
    : profile_(std::move(profile)), pool_(profile_.num_gpu_blocks, profile_.block_size) {
  UpdateGauges();
}

Status Engine::Impl::AddRequest(EngineRequest request) {
  if (request.prompt.empty()) {
    return Status(ErrorCode::kInvalidArgument, "prompt must not be empty").WithParam("prompt");
  }
  if (request.max_tokens < 1) {
    return Status(ErrorCode::kInvalidArgument, "max_tokens must be at least 1")
        .WithParam("max_tokens");
  }
  if (live_.contains(request.id)) {
    return Status(ErrorCode::kInvalidArgument, "duplicate request id: " + request.id);
  }
  const long long total = static_cast<long long>(request.prompt.size()) + request.max_tokens;
  if (total > profile_.max_model_len) {
    return Status(ErrorCode::kInvalidArgument, "prompt tokens + max_tokens (" +
                                                   std::to_string(total) +
                                                   ") exceed the model's maximum context length (" +
                                                   std::to_string(profile_.max_model_len) + ")")
        .WithParam("max_tokens");
  }
  // vLLM refuses to start when max_model_len does not fit in the KV cache; here the
  // profile may be tiny, so a request that could never fit is refused instead.
  const long long capacity = static_cast<long long>(profile_.num_gpu_blocks) * profile_.block_size;
  if (total > capacity) {
    return Status(ErrorCode::kInvalidArgument,
                  "prompt tokens + max_tokens (" + std::to_string(total) +
                      ") exceed the KV cache capacity (" + std::to_string(capacity) + " tokens)")
        .WithParam("max_tokens");
  }
  auto r = std::make_unique<Req>();
  r->prompt_len = static_cast<int>(request.prompt.size());
  r->tokens = request.prompt;
  r->tokens.reserve(request.prompt.size() + request.max_tokens);
  r->eos_at = request.ignore_eos ? 0 : EosPosition(request.seed, request.max_tokens);
  r->ready = request.arrival + profile_.frontend_s_per_prompt_token * r->prompt_len;
  r->pending_key = {r->ready, next_seq_++};
  r->r = std::move(request);
  Req* raw = r.get();
  pending_.emplace(raw->pending_key, raw);
  live_.emplace(raw->r.id, std::move(r));
  return Status::Ok();
}

std::optional<Seconds> Engine::Impl::NextReadyTime() const {
  if (pending_.empty()) return std::nullopt;
  return pending_.begin()->first.first;
}

void Engine::Impl::Abort(const std::string& id) {
  auto it = live_.find(id);
  if (it == live_.end() || it->second->abort_requested) return;
  Req& r = *it->second;
  if (planned_) {
    // The planned step still counts on its blocks: apply at CompleteStep.
    r.abort_requested = true;
    deferred_aborts_.push_back(&r);
    return;
  }
  FinishAbort(r, last_time_);
  UpdateGauges();
}

void Engine::Impl::FreeBlocks(Req& r) {
  // Reverse order: the request's tail blocks reach the free queue first and are evicted
  // first (vLLM's KVCacheManager.free).
  std::vector<int> rev(r.blocks.rbegin(), r.blocks.rend());
  pool_.Free(rev);
  r.blocks.clear();
}

void Engine::Impl::RemoveFromQueues(Req& r) {
  switch (r.state) {
    case Req::State::kPending:
      pending_.erase(r.pending_key);
      break;
    case Req::State::kWaiting:
      std::erase(waiting_, &r);
      break;
    case Req::State::kRunning:
      std::erase(running_, &r);
      break;
  }
}

void Engine::Impl::FinishAbort(Req& r, Seconds t) {
  RemoveFromQueues(r);
  FreeBlocks(r);
  FinishedRequest f;
  f.request_id = r.r.id;
  f.reason = FinishReason::kAbort;
  f.prompt_tokens = r.prompt_len;
  f.cached_tokens = r.cached_tokens;
  f.completion_tokens = r.num_output;
  f.arrival = r.r.arrival;
  f.first_scheduled = r.first_scheduled;
  f.first_token = r.first_token;
  f.finished = t;
  f.preemptions = r.preemptions;
  abort_outputs_.push_back(std::move(f));
  ++metrics_.request_success_abort;
  ++metrics_.request_success_total;
  std::string id = r.r.id;  // erase must not read the key from the node it destroys
  live_.erase(id);
}

void Engine::Impl::EmitToken(Req& r, Seconds t, StepOutput& out) {
  const int index = r.num_output;
  std::string text = " " + SyntheticWord(r.r.seed, static_cast<uint64_t>(index));
  std::vector<TokenId> ids = Tokenize(text);  // exactly one token by construction
  TokenId id = ids.empty() ? 0 : ids[0];
  r.tokens.push_back(id);
  ++r.num_output;
  ++metrics_.generation_tokens_total;
  if (index == 0) {
    r.first_token = t;
    metrics_.prompt_tokens_total += r.prompt_len;
    metrics_.prompt_tokens_cached_total += static_cast<uint64_t>(r.cached_tokens);
    metrics_.time_to_first_token_seconds.Observe(t - r.r.arrival);
  } else {
    metrics_.inter_token_latency_seconds.Observe(t - r.last_token);
  }
  r.last_token = t;
  out.tokens.push_back({r.r.id, id, std::move(text), index});
}

StepOutput Engine::Impl::CompleteStep() {
  StepOutput out;
  if (!planned_) return out;
  planned_ = false;
  out.start = plan_start_;
  out.end = plan_start_ + plan_duration_;
  last_time_ = std::max(last_time_, out.end);

  std::vector<Req*> done;
  for (const Scheduled& s : scheduled_) {
    Req& r = *s.req;
    if (s.is_decode) {
      ++out.scheduled_decode_seqs;
    } else {
      out.scheduled_prefill_tokens += s.tokens;
    }
    if (r.abort_requested) continue;
    r.num_computed += s.tokens;
    if (r.num_computed < r.num_tokens()) continue;  // prefill chunk, more to come
    EmitToken(r, out.end, out);
    // Length is checked before EOS, as vLLM's check_stop does.
    if (r.num_output >= r.r.max_tokens || (r.eos_at > 0 && r.num_output == r.eos_at)) {
      done.push_back(&r);
    }
  }
  scheduled_.clear();

  for (Req* r : done) {
    FinishedRequest f;
    f.request_id = r->r.id;
    f.reason = r->num_output >= r->r.max_tokens ? FinishReason::kLength : FinishReason::kStop;
    f.prompt_tokens = r->prompt_len;
    f.cached_tokens = r->cached_tokens;
    f.completion_tokens = r->num_output;
    f.arrival = r->r.arrival;
    f.first_scheduled = r->first_scheduled;
    f.first_token = r->first_token;
    f.finished = out.end;
    f.preemptions = r->preemptions;
    ++metrics_.request_success_total;
    ++(f.reason == FinishReason::kLength ? metrics_.request_success_length
                                         : metrics_.request_success_stop);
    metrics_.e2e_request_latency_seconds.Observe(out.end - r->r.arrival);
    RemoveFromQueues(*r);
    FreeBlocks(*r);
    live_.erase(f.request_id);  // destroys *r
    out.finished.push_back(std::move(f));
  }

  for (Req* r : deferred_aborts_) FinishAbort(*r, out.end);
  deferred_aborts_.clear();
  for (auto& f : abort_outputs_) out.finished.push_back(std::move(f));
  abort_outputs_.clear();

  for (BlockCacheEvent& e : pool_.TakeEvents()) {
    if (!e.stored) {
      out.kv_events.push_back(kv::BlockRemoved{{e.hash}, kv::kMediumGpu, std::nullopt});
      continue;
    }
    // A block continuing the previous BlockStored's chain joins it (one event per run of
    // blocks a request filled, as vLLM's cache_full_blocks).
    auto* last =
        out.kv_events.empty() ? nullptr : std::get_if<kv::BlockStored>(&out.kv_events.back());
    if (last && e.parent && *e.parent == last->block_hashes.back()) {
      last->block_hashes.push_back(e.hash);
      last->token_ids.insert(last->token_ids.end(), e.tokens.begin(), e.tokens.end());
      continue;
    }
    kv::BlockStored s;
    s.block_hashes = {e.hash};
    s.parent_block_hash = e.parent;
    s.token_ids = std::move(e.tokens);
    s.block_size = profile_.block_size;
    s.medium = kv::kMediumGpu;
    out.kv_events.push_back(std::move(s));
  }
  PromoteReady(out.end);  // so the waiting gauge counts requests past their front end
  UpdateGauges();
  return out;
}

void Engine::Impl::UpdateGauges() {
  metrics_.num_requests_running = static_cast<int>(running_.size());
  metrics_.num_requests_waiting = static_cast<int>(waiting_.size());
  metrics_.kv_cache_usage_perc = pool_.Usage();
}

// ---- Engine: forwards to Impl ----

Engine::Engine(HardwareProfile profile) : impl_(std::make_unique<Impl>(std::move(profile))) {}
Engine::~Engine() = default;
Status Engine::AddRequest(EngineRequest request) { return impl_->AddRequest(std::move(request)); }
void Engine::Abort(const std::string& request_id) { impl_->Abort(request_id); }
bool Engine::HasWork() const { return impl_->HasWork(); }
std::optional<Seconds> Engine::NextReadyTime() const { return impl_->NextReadyTime(); }
std::optional<Seconds> Engine::PlanStep(Seconds now) { return impl_->PlanStep(now); }
StepOutput Engine::CompleteStep() { return impl_->CompleteStep(); }
const EngineMetrics& Engine::metrics() const { return impl_->metrics_; }
const HardwareProfile& Engine::profile() const { return impl_->profile_; }

}  // namespace kinference::engine
