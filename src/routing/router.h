// Router: the routing core. Given a request and candidate endpoints, picks one and says
// why. A pure library: no I/O, no threads, time passed in explicitly.
//
// It sees only what a real deployment exposes (DEVELOPERS.md): each endpoint's scraped
// vLLM /metrics with their age (ObserveMetrics), its own in-flight bookkeeping
// (OnDispatched / OnFirstToken / OnFinished), and finished requests' usage and timings.
// From these it keeps, per endpoint, an approximate prefix index (routing/prefix_index.h)
// and a TTFT predictor learned online (routing/ttft_predictor.h). It never sees an
// engine's internals. The gateway (real time) and the simulator (virtual time) feed it
// the same events.
//
// Cooldown: an endpoint that answered 429, 503 or 529 with a Retry-After (or
// retry-after-ms) asked to be left alone for that long; the shell tells the router
// (CoolDown) and Pick skips it until the time has passed, choosing among the other
// healthy candidates. When every healthy candidate is cooling down Pick answers
// kResourceExhausted and SoonestCooldownEnd says when the first comes back; the gateway
// refuses such a request itself (429 on the OpenAI fronts, 529 overloaded_error on
// /v1/messages, Retry-After until that end) without calling any upstream. Why not send it
// to the endpoint whose cooldown ends first: that endpoint said it would refuse it (a
// rate limiter counts refused calls too), so the client would get the same error later
// and the endpoint one more call it asked not to get; the SDKs (openai-python,
// anthropic-sdk-python) retry a 429 / 529 after its Retry-After, and LiteLLM's router
// does the same when every deployment is cooling down (RouterRateLimitError, 429 "No
// deployments available for selected model, Try again in N seconds"; it cools a
// deployment down for the Retry-After of its error unless the deployment sets its own
// cooldown_time, litellm/router.py). A cooldown is not ill health: unlike an ejection or
// an open circuit breaker (SetHealthy) it does not grow, needs no probe (the endpoint said
// when to come back), and leaves readiness alone. A 429 or 503 without Retry-After starts none:
// a 503 already ejects a local endpoint (routing/outlier.h) and counts towards a
// provider's circuit breaker, and for a 429 there is no stated time to honour (docs/
// reliability.md, "Cooldown").
//
// Thread-safety: not thread-safe. The gateway serialises all calls on one strand.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kv/events.h"
#include "routing/metrics_snapshot.h"

namespace kinference::routing {

using EndpointId = std::string;

// An offline-profiled prefill cost for an endpoint's hardware and model, as Mooncake's
// Conductor and llm-d's estimators are configured with (time for U uncached tokens after
// C cached ones = s_per_token * U + s_per_pair * U * (C + U / 2)); all 0 when the
// deployment states none. Only the peer strategies that their designs give one use it;
// predicted-ttft learns its own (routing/ttft_predictor.h).
struct PrefillProfile {
  double s_per_token = 0;
  double s_per_pair = 0;
  bool known() const { return s_per_token > 0; }
  double Seconds(double uncached, double cached) const {
    return s_per_token * uncached + s_per_pair * uncached * (cached + uncached / 2);
  }
};

struct EndpointInfo {
  EndpointId id;      // unique name, e.g. "pool-a/0"
  std::string model;  // served model name
  std::string pool;   // pool name
  PrefillProfile prefill_profile = {};
};

// What the router knows about a request before routing it.
struct RequestFeatures {
  std::string request_id;
  std::string model;
  // Chained hashes of consecutive fixed-size character blocks of the rendered request
  // text (see ChainedBlockHashes); the prefix index matches on these.
  std::vector<uint64_t> block_hashes;
  size_t prompt_chars = 0;  // characters of the rendered text
  int max_tokens = 0;       // requested output cap (0 if unknown)
  // Engine block keys (kv/block_hash.h BlockHasher::BlockKeys) of the prompt's token ids
  // under the served model's tokenizer and chat template, in blocks of
  // `engine_block_size` tokens, matched against the precise index of endpoints whose
  // KV-event feed is live (SetKvEventsLive). Empty when the caller could not tokenize
  // the request exactly: the approximate index (block_hashes) is used then.
  std::vector<uint64_t> engine_block_keys;
  int engine_block_size = 0;
  int prompt_tokens = 0;  // exact prompt tokens when known (0: estimated from characters)
};

// Chained hashes of `text` split into blocks of `block_chars` characters; the last
// partial block is dropped. hash[i] depends on every character of blocks 0..i and on `key`.
// XXH3-64 is fast but not collision-resistant: a client who knows the key can search for
// prompts whose hashes crowd one region of the prefix index's open-addressing table and
// slow every lookup. The gateway passes a random per-process key (GatewayContext::
// prefix_hash_key), so its hashes cannot be predicted from outside; the simulator passes 0
// so that its runs stay deterministic. Only hashes made with the same key are comparable.
std::vector<uint64_t> ChainedBlockHashes(std::string_view text, size_t block_chars,
                                         uint64_t key = 0);

struct CandidateScore {
  EndpointId endpoint;
  double predicted_ttft_s = 0;  // predictor's TTFT estimate
  double queue_wait_s = 0;      // part of it spent waiting for work ahead
  double matched_tokens = 0;    // estimated prefix-cache hit (tokens)
  int in_flight = 0;            // requests dispatched here and not finished
  double metrics_age_s = -1;    // age of the last scrape; -1 if never scraped
  double score = 0;             // the strategy's own score (lower is better)
  bool precise = false;         // matched_tokens from the precise (KV-event) index
};

struct Decision {
  EndpointId endpoint;
  std::string strategy;
  double predicted_ttft_s = 0;
  double matched_tokens = 0;
  bool precise = false;                    // the chosen endpoint's match came from its KV events
  std::vector<CandidateScore> candidates;  // one per candidate considered
};

// The precise (KV-event) index of one endpoint, for metrics and debugging.
struct KvIndexStats {
  bool live = false;   // matched with it now (SetKvEventsLive)
  size_t blocks = 0;   // engine blocks it holds
  int block_size = 0;  // engine block size (tokens); 0 until a BlockStored
  uint64_t batches = 0, clears = 0;
};

struct Usage {
  int prompt_tokens = 0;
  int cached_tokens = 0;  // prompt_tokens_details.cached_tokens
  int completion_tokens = 0;
  // False when the usage had no prompt_tokens_details (vLLM reports them only with
  // --enable-prompt-tokens-details, off by default): cached_tokens is then unknown, not
  // 0, and the router corrects its prefix index from the first token's timing instead
  // (a TTFT past the midpoint between the predictions with and without the expected
  // hit means the hit did not happen).
  bool cached_tokens_reported = true;
};

enum class Outcome { kSuccess, kError, kCancelled };

struct RouterConfig {
  size_t block_chars = 128;  // prefix-index block size (characters)
  std::string default_strategy = "predicted-ttft";
  double stale_metrics_s = 5.0;  // older scrapes are trusted less
  uint64_t seed = 1;             // for `random` and tie-breaking
  // Learn the TTFT cost's shape as well as its speed (routing/ttft_predictor.h).
  bool learn_cost_shape = true;
  // Score-term weights handed to every strategy (StrategyOptions::weights; for
  // predicted-ttft the names of kPredictedTtftTerms in routing/strategy.h). Empty: defaults.
  std::map<std::string, double, std::less<>> strategy_options;
};

class Router {
 public:
  explicit Router(RouterConfig config);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  void AddEndpoint(const EndpointInfo& info, Seconds now);
  void RemoveEndpoint(const EndpointId& id);
  // Forgets what the router believed an endpoint's cache held (e.g. it restarted).
  void ResetEndpoint(const EndpointId& id);
  // A scrape of the endpoint's /metrics taken at `scraped_at`.
  void ObserveMetrics(const EndpointId& id, const MetricsSnapshot& snapshot, Seconds scraped_at);
  // Marks an endpoint (un)healthy; unhealthy endpoints are never picked.
  void SetHealthy(const EndpointId& id, bool healthy);

  // ---- Cooldown (header comment) ----
  // The endpoint asked not to be sent requests before `until`: Pick and Score leave it out
  // while now < until. A later `until` extends a cooldown, an earlier one never shortens
  // it. Returns true when this started one (the endpoint was not cooling down at `now`).
  // Unknown endpoints are ignored (false).
  bool CoolDown(const EndpointId& id, Seconds until, Seconds now);
  // When the endpoint's cooldown ends; nullopt when it is not cooling down at `now`.
  std::optional<Seconds> CoolingUntil(const EndpointId& id, Seconds now) const;
  // The earliest end among the healthy `candidates` cooling down at `now` (nullopt: none
  // is), for the Retry-After of a request they all refused.
  std::optional<Seconds> SoonestCooldownEnd(std::span<const EndpointId> candidates,
                                            Seconds now) const;
  // Endpoints whose cooldown ended by `now` since the last call, each once (the shell
  // makes them available to admission again).
  std::vector<EndpointId> CooldownsEnded(Seconds now);

  // Picks among `candidates` (all endpoints serving features.model when empty) with
  // the named strategy (config default when empty), leaving out unhealthy endpoints and
  // those cooling down. Errors: kInvalidArgument for an unknown strategy, kNotFound when
  // no endpoint serves the model, kUnavailable when none is healthy, kResourceExhausted
  // when every healthy one is cooling down (SoonestCooldownEnd: until when).
  Result<Decision> Pick(const RequestFeatures& features, std::span<const EndpointId> candidates,
                        std::string_view strategy, Seconds now);

  // Request lifecycle, as the gateway observes it.
  void OnDispatched(const RequestFeatures& features, const Decision& decision, Seconds now);
  void OnFirstToken(const std::string& request_id, Seconds now);
  void OnFinished(const std::string& request_id, const Usage& usage, Outcome outcome, Seconds now);
  // The median gap between the request's streamed tokens, when the caller saw them (call
  // before OnFinished). It teaches the endpoint's decode model (routing/decode_model.h)
  // the decode step alone: the mean gap also holds the steps stretched by other
  // requests' prefill chunks, which the choice's stall term counts separately. Without
  // it, the mean ((finish - first token) / (completion tokens - 1)) is used.
  void OnTokenTimings(const std::string& request_id, double itl_median_s);
  // What a successful chat completion left in `endpoint`'s cache beyond its prompt: vLLM
  // caches the KV of generated tokens too, and the next turn of a conversation re-sends
  // prompt + reply, so the prefix index should hold the reply's blocks.
  // Contract for callers (the gateway, the simulator):
  //   endpoint      where the request ran (its Decision::endpoint);
  //   block_hashes  ChainedBlockHashes(text, RouterConfig::block_chars) where `text` is
  //                 the request's messages followed by one {"role": "assistant",
  //                 "content": <the full reply text>} message, rendered exactly as for
  //                 RequestFeatures (gateway::RenderChatText: role + "\n" + content +
  //                 "\n" per message) - the text the next turn's rendering starts with;
  //   when          after a kSuccess OnFinished (the order relative to it does not
  //                 matter); not for errors or cancellations, nor for `prompt`
  //                 (completions API) requests, whose text no later request re-renders.
  // The last block is not recorded: vLLM caches only full blocks of computed tokens, and
  // the reply's last token and the end-of-turn marker are computed only by the next
  // turn. Unknown endpoints are ignored. Cost O(blocks).
  void OnCompletionText(const EndpointId& endpoint, std::span<const uint64_t> block_hashes,
                        Seconds now);

  // ---- KV events: the precise prefix index (routing/precise_index.h) ----
  // A batch from the endpoint's KV-event publisher, in sequence order (kv/event_stream.h
  // decides the order, replays and restarts). Unknown endpoints are ignored.
  void OnKvEvents(const EndpointId& id, const kv::EventBatch& batch);
  // Forgets the endpoint's precise index (publisher restarted, an unfillable gap).
  void ClearKvEvents(const EndpointId& id);
  // Whether the endpoint's feed can be trusted now (subscribed, connected, decoding).
  // Not live (the default, a dead publisher, a decoder failure): its requests are
  // matched with the approximate index, which is kept up to date in both modes.
  void SetKvEventsLive(const EndpointId& id, bool live);
  std::optional<KvIndexStats> KvIndex(const EndpointId& id) const;

  std::vector<std::string> StrategyNames() const;
  std::vector<EndpointInfo> Endpoints() const;

  // The view Pick would have of each healthy endpoint in `candidates` (unknown and
  // unhealthy ones, and those cooling down, are left out), in the order given, without
  // choosing or recording anything: predicted TTFT, queue wait, prefix match, in-flight
  // count and metrics age at `now`. `score` is 0 (no strategy ran). For the gateway's
  // policy evaluation.
  std::vector<CandidateScore> Score(const RequestFeatures& features,
                                    std::span<const EndpointId> candidates, Seconds now) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kinference::routing
