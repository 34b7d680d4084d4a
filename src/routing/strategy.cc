#include "routing/strategy.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace kinference::routing {

// Defined in strategies_basic.cc.
std::vector<std::pair<std::string, StrategyFactory>> BuiltinStrategies();

namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, StrategyFactory, std::less<>> factories;
};
Registry& GetRegistry() {
  // Built-ins are added on first use (not by static initialisers, which a static
  // library's linker may drop).
  static Registry* r = [] {
    auto* reg = new Registry();
    for (auto& [name, f] : BuiltinStrategies()) reg->factories[name] = std::move(f);
    return reg;
  }();
  return *r;
}
}  // namespace

void RegisterStrategy(std::string name, StrategyFactory factory) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  r.factories[std::move(name)] = std::move(factory);
}

std::optional<StrategyFactory> FindStrategy(std::string_view name) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  auto it = r.factories.find(name);
  if (it == r.factories.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> RegisteredStrategyNames() {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, f] : r.factories) out.push_back(name);
  return out;
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

size_t ArgMin(std::span<const double> scores, std::span<const double> tie_break, uint64_t& rng) {
  std::vector<size_t> best;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (best.empty()) {
      best.push_back(i);
      continue;
    }
    size_t b = best.front();
    double tb_i = tie_break.empty() ? 0 : tie_break[i];
    double tb_b = tie_break.empty() ? 0 : tie_break[b];
    if (scores[i] < scores[b] || (scores[i] == scores[b] && tb_i < tb_b)) {
      best.assign(1, i);
    } else if (scores[i] == scores[b] && tb_i == tb_b) {
      best.push_back(i);
    }
  }
  if (best.size() == 1) return best.front();
  return best[SplitMix64(rng) % best.size()];
}

}  // namespace kinference::routing
