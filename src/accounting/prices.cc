#include "accounting/prices.h"

#include <algorithm>

namespace kinference::accounting {

int64_t TokenCounts::uncached_input() const {
  return std::max<int64_t>(0, prompt - cached - cache_creation);
}

NanoUsd Cost(const Price& price, const TokenCounts& t) {
  // Units: tokens * nano-USD per million tokens = 1e-15 USD. The largest term a request
  // can reach (1e7 tokens at 1e9 USD/M, the ParseUsd ceiling) exceeds int64, so use a
  // 128-bit accumulator.
  __int128 femto =
      static_cast<__int128>(t.uncached_input()) * price.input +
      static_cast<__int128>(std::max<int64_t>(0, t.cached)) * price.cached_input +
      static_cast<__int128>(std::max<int64_t>(0, t.cache_creation)) * price.cache_write +
      static_cast<__int128>(std::max<int64_t>(0, t.completion)) * price.output;
  return static_cast<NanoUsd>((femto + 500'000) / 1'000'000);
}

PriceTable::PriceTable(std::vector<PriceEntry> entries) : entries_(std::move(entries)) {}

std::optional<Price> PriceTable::Lookup(const std::string& provider,
                                        const std::string& model) const {
  // Rank: 3 = exact provider and model, 2 = any provider + model, 1 = provider + any
  // model, 0 = any/any.
  int best_rank = -1;
  const Price* best = nullptr;
  for (const auto& e : entries_) {
    bool p_any = e.provider == kAny, m_any = e.model == kAny;
    if (!p_any && e.provider != provider) continue;
    if (!m_any && e.model != model) continue;
    int rank = (m_any ? 0 : 2) + (p_any ? 0 : 1);
    if (rank > best_rank) {
      best_rank = rank;
      best = &e.price;
    }
  }
  if (!best) return std::nullopt;
  return *best;
}

}  // namespace kinference::accounting
