// Read-only queries on the engine's internal state for the simulator's oracle
// (engine/engine.h). They recompute block hashes instead of caching them, so they never
// change what the scheduler later does.
#include <algorithm>

#include "engine/engine_impl.h"

namespace kinference::engine {
namespace {

// Whole-block prefix-cache hit of `tokens` in `pool`, capped at (n - 1) / block_size
// blocks as FindCachedPrefix does.
int HitTokens(const BlockPool& pool, const std::vector<TokenId>& tokens, int block_size) {
  const int n = static_cast<int>(tokens.size());
  if (n == 0) return 0;
  const int max_blocks = (n - 1) / block_size;
  BlockHash parent;
  int hits = 0;
  for (int i = 0; i < max_blocks; ++i) {
    BlockHash h = ChainedBlockHash(
        i > 0 ? &parent : nullptr,
        std::span<const TokenId>(tokens.data() + static_cast<size_t>(i) * block_size,
                                 static_cast<size_t>(block_size)));
    if (!pool.Lookup(h.key)) break;
    parent = h;
    ++hits;
  }
  return hits * block_size;
}

}  // namespace

int Engine::Impl::PrefixCacheHitTokens(const std::vector<TokenId>& prompt) const {
  return HitTokens(pool_, prompt, profile_.block_size);
}

int Engine::Impl::QueuedPrefillTokens() const {
  long long total = 0;
  auto unscheduled = [&](const Req& r) {
    return r.num_tokens() - HitTokens(pool_, r.tokens, profile_.block_size);
  };
  for (const auto& [key, r] : pending_) total += unscheduled(*r);
  for (const Req* r : waiting_) total += unscheduled(*r);
  for (const Req* r : running_) {
    if (r->num_output == 0) total += std::max(0, r->num_tokens() - r->num_computed);
  }
  return static_cast<int>(std::min<long long>(total, 1LL << 30));
}

int Engine::PrefixCacheHitTokens(const std::vector<TokenId>& prompt) const {
  return impl_->PrefixCacheHitTokens(prompt);
}
int Engine::QueuedPrefillTokens() const { return impl_->QueuedPrefillTokens(); }
int Engine::NumRunning() const { return impl_->NumRunning(); }

}  // namespace kinference::engine
