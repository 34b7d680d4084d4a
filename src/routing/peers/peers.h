// Peer routing strategies: re-implementations, from their published descriptions (not
// their code), of the policies other inference routers use, registered in the strategy
// registry (routing/strategy.h) so the Router, gateway and simulator can run them by name
// next to ours for comparison.
//
//   gie          Gateway API Inference Extension / llm-d default scheduler: weighted
//                scorers (prefix-cache 3, queue 2, kv-cache-utilization 2), max-score
//                picker, approximate prefix index capped at the first 256 blocks of 64
//                characters. Sources: kubernetes-sigs/gateway-api-inference-extension,
//                pkg/epp/scheduling/framework/plugins (prefix plugin DefaultConfig:
//                BlockSize 64, MaxPrefixBlocksToMatch 256, LRUCapacityPerServer 31250)
//                and its "Prefix Cache Aware Plugin Configuration" guide; weights as
//                described for the llm-d default scheduling profile (not re-checked).
//   sglang       SGLang router ("SMG") cache_aware policy: shortest queue when load is
//                imbalanced (abs 64 and rel 1.5), else highest prefix match rate if above
//                cache_threshold 0.3, else smallest approximate tree. Source: SMG's documentation,
//                pages getting-started/load-balancing and concepts/routing/cache-aware
//                (defaults --cache-threshold 0.3, --balance-abs-threshold 64,
//                --balance-rel-threshold 1.5).
//   dynamo       NVIDIA Dynamo KV router: cost = overlap_score_weight * prefill_blocks +
//                decode_blocks, lowest wins (temperature 0). Source: Dynamo docs, "KV Cache
//                Routing" and "Router Design" (kv-overlap-score-weight default 1,
//                router-temperature default 0). With the engines' KV events (the router's
//                precise index live for an endpoint, CandidateView::precise), the overlap
//                is what the engine holds, as Dynamo's default mode; without them, its
//                approximate mode (what it sent there, forgotten after a TTL).
//   mooncake     Mooncake Conductor's TTFT estimate: queued prefill time + prefill time of
//                the request's uncached length (from the endpoint's offline profile,
//                EndpointInfo::prefill_profile, when given), lowest wins. Source: Qin et al.,
//                "Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving", FAST
//                2025, Section 5 (KVCache-centric scheduling, Algorithm 1), without its KVCache
//                transfer step (vLLM replicas cannot pull each other's blocks).
//   llmd-sticky  llm-d precise-prefix-cache-aware style stickiness: stay on the warmest
//                endpoint unless its estimated TTFT exceeds the best other's by a penalty.
//                Source: llm-d "KV-cache aware routing" guide (behaviour only; the
//                penalty value is ours, see LlmdStickyOptions).
//
// Every strategy sees only what strategy.h's CandidateView and hooks expose: scraped
// metrics, the router's in-flight bookkeeping and prefix match, and the block hashes of
// the requests it routed (its own approximate cache view, like the originals keep).
// The block hashes are the router's (RouterConfig::block_chars characters per block, 128
// by default); strategies recover that size from each request (EstimateBlockChars in
// peer_util.h) to express character limits such as gie's 16384-character cap.
//
// Registration: linking kinference_routing registers all five (auto_register.cc, kept
// by a linker --undefined option in src/routing/CMakeLists.txt); RegisterPeerStrategies()
// does the same explicitly and is idempotent.
//
// Thread-safety: RegisterPeerStrategies locks the registry; strategy instances are not
// thread-safe (used on the Router's strand, like every Strategy).
//
// * Values recalled from the projects' sources but not re-checked against them for this
//   implementation: GIE's LRUCapacityPerServer 31250, SGLang's max_tree_size, Dynamo's
//   approximate-mode TTL of 120 s. No unit-test choice depends on them except the
//   expiry test, which asserts the 120 s configured here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "routing/strategy.h"

namespace kinference::routing::peers {

// The Gateway API Inference Extension endpoint picker refreshes each endpoint's metrics
// every 50 ms by default (cmd/epp runserver options, DefaultRefreshMetricsInterval =
// 50 * time.Millisecond; also its minimum); llm-d's scheduler runs on it.
inline constexpr double kGieRefreshMetricsIntervalS = 0.05;

struct GieOptions {
  double prefix_weight = 3;            // prefix-cache-scorer
  double queue_weight = 2;             // queue-scorer
  double kv_cache_weight = 2;          // kv-cache-utilization-scorer
  size_t gie_block_chars = 64;         // prefix plugin BlockSize (characters)
  size_t max_prefix_blocks = 256;      // MaxPrefixBlocksToMatch
  size_t lru_capacity_blocks = 31250;  // LRUCapacityPerServer (64-char blocks)*
};

struct SglangOptions {
  double cache_threshold = 0.3;        // min prefix match rate to follow the cache
  double balance_abs_threshold = 64;   // max - min in-flight load
  double balance_rel_threshold = 1.5;  // max > rel * min
  // Characters kept per endpoint in the approximate tree before LRU eviction (SGLang's
  // max_tree_size bounds its tree likewise; 2^26 characters here)*.
  double max_tree_chars = 67108864;
};

struct DynamoOptions {
  double overlap_score_weight = 1;  // --kv-overlap-score-weight default
  // Approximate mode (no KV events): predicted cached blocks expire this long after the
  // router last sent them (Dynamo's approximate-mode TTL; 120 s)*.
  double block_ttl_s = 120;
};

struct MooncakeOptions {
  // Prefill throughput (tokens/s) standing in for the Conductor's offline-profiled
  // prefill time; 0 = TtftPredictor's prior (1000 / c_prefill = 4000 tokens/s).
  double prefill_tokens_per_s = 0;
};

struct LlmdStickyOptions {
  // Peak prefill throughput (tokens/s); 0 = TtftPredictor's prior (4000 tokens/s).
  double prefill_tokens_per_s = 0;
  // Extra estimated TTFT (seconds) the warm endpoint may carry before a colder one wins:
  // our choice, ~ the prefill of 2000 tokens (a long system prompt plus history) at the
  // prior rate, i.e. about what the cache saves a typical multi-turn request.
  double penalty_s = 0.5;
};

std::unique_ptr<Strategy> MakeGie(const StrategyOptions& o, const GieOptions& g = {});
std::unique_ptr<Strategy> MakeSglang(const StrategyOptions& o, const SglangOptions& s = {});
std::unique_ptr<Strategy> MakeDynamo(const StrategyOptions& o, const DynamoOptions& d = {});
std::unique_ptr<Strategy> MakeMooncake(const StrategyOptions& o, const MooncakeOptions& m = {});
std::unique_ptr<Strategy> MakeLlmdSticky(const StrategyOptions& o, const LlmdStickyOptions& l = {});

// Names registered by RegisterPeerStrategies: gie, sglang, dynamo, mooncake, llmd-sticky.
std::vector<std::string> PeerStrategyNames();
// Registers the five with default options (idempotent; replaces same-named entries).
void RegisterPeerStrategies();

}  // namespace kinference::routing::peers
