#include "workload/workload.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "common/tokenizer.h"
#include "workload/workload_internal.h"

namespace kinference::workload {

namespace internal {

// SplitMix64 finaliser (Steele et al., "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a bijective 64-bit mix.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t DeriveSeed(uint64_t seed, SeedTag tag, uint64_t a, uint64_t b) {
  return Mix64(Mix64(Mix64(seed ^ Mix64(static_cast<uint64_t>(tag))) ^ a) ^ b);
}

}  // namespace internal

using internal::DeriveSeed;
using internal::SeedTag;

// Per-session metadata plus what generates a session's text on demand.
struct SessionSource::Impl {
  std::vector<double> arrivals;  // empty: closed loop (no arrival times)
  std::vector<uint32_t> turns;   // per session
  size_t total_turns = 0;
  std::function<Session(size_t)> make;  // must be safe to call from several threads
};

namespace {

// Uniform in [0, 1) from the top 53 bits (std::mt19937_64 output is fixed by the
// standard; std:: distributions are not, so they are avoided for determinism).
double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Poisson process of `rate` per second: arrival times with exponential gaps, first at 0.
std::vector<double> PoissonArrivals(size_t n, double rate, uint64_t seed) {
  std::mt19937_64 rng(DeriveSeed(seed, SeedTag::kArrivals, 0));
  std::vector<double> out(n);
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) t += -std::log1p(-Uniform01(rng)) / rate;
    out[i] = t;
  }
  return out;
}

// Bursts of `size` every `interval` s, each spread evenly over `spread` s.
std::vector<double> BurstArrivals(size_t n, size_t size, double interval, double spread) {
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t burst = i / size, k = i % size;
    out[i] = static_cast<double>(burst) * interval +
             (size > 1 ? spread * static_cast<double>(k) / static_cast<double>(size - 1) : 0.0);
  }
  return out;
}

// Shared-prefix / independent requests: one turn of prefix (+ unique suffix).
std::function<Session(size_t)> SingleTurn(const WorkloadSpec& spec, bool shared) {
  const SharedPrefixShape shape = spec.shared_prefix;
  const uint64_t seed = spec.seed;
  auto prefixes = std::make_shared<std::vector<std::string>>();
  auto choice = std::make_shared<std::vector<uint32_t>>();
  if (shared) {
    for (size_t p = 0; p < shape.prefixes; ++p)
      prefixes->push_back(
          SyntheticText(DeriveSeed(seed, SeedTag::kPrefix, p), shape.prefix_tokens));
    std::mt19937_64 rng(DeriveSeed(seed, SeedTag::kPrefixChoice, 0));
    choice->reserve(spec.sessions);
    for (size_t i = 0; i < spec.sessions; ++i) {
      // In bursts, every request of burst b carries prefix b: one long prompt, cold.
      const uint64_t draw = spec.burst_size > 0 ? i / spec.burst_size : rng();
      choice->push_back(static_cast<uint32_t>(draw % shape.prefixes));
    }
  }
  return [=](size_t i) {
    Session s;
    Turn t;
    t.max_tokens = shape.output_tokens;
    if (shared) {
      const uint32_t p = (*choice)[i];
      s.id = fmt::format("sp-{:05d}-p{:02d}", i, p);
      t.user_text.reserve((*prefixes)[p].size() + shape.suffix_tokens * 6);
      t.user_text = (*prefixes)[p];
    } else {
      s.id = fmt::format("ind-{:05d}", i);
      t.user_text =
          SyntheticText(DeriveSeed(seed, SeedTag::kPrefix, 1000000 + i), shape.prefix_tokens);
    }
    t.user_text += SyntheticText(DeriveSeed(seed, SeedTag::kSuffix, i), shape.suffix_tokens);
    s.turns.push_back(std::move(t));
    return s;
  };
}

std::function<Session(size_t)> Multiturn(const WorkloadSpec& spec) {
  const MultiturnShape m = spec.multiturn;
  const uint64_t seed = spec.seed;
  return [=](size_t i) {
    Session s;
    s.id = fmt::format("mt-{:05d}", i);
    s.system_prompt = SyntheticText(DeriveSeed(seed, SeedTag::kSystem, i), m.system_tokens);
    for (size_t k = 0; k < m.turns; ++k) {
      Turn t;
      t.user_text = SyntheticText(DeriveSeed(seed, SeedTag::kUser, i, k), m.user_tokens);
      t.max_tokens = m.output_tokens;
      t.think_time_s = k == 0 ? 0.0 : m.think_time_s;
      s.turns.push_back(std::move(t));
    }
    return s;
  };
}

}  // namespace

SessionSource::SessionSource() : impl_(std::make_shared<Impl>()) {}

SessionSource SessionSource::FromSessions(std::vector<Session> sessions) {
  auto impl = std::make_shared<Impl>();
  bool all_arrive = !sessions.empty();
  for (const auto& s : sessions) {
    impl->turns.push_back(static_cast<uint32_t>(s.turns.size()));
    impl->total_turns += s.turns.size();
    all_arrive = all_arrive && s.arrival_s.has_value();
  }
  if (all_arrive)
    for (const auto& s : sessions) impl->arrivals.push_back(*s.arrival_s);
  auto held = std::make_shared<const std::vector<Session>>(std::move(sessions));
  impl->make = [held](size_t i) { return (*held)[i]; };
  SessionSource out;
  out.impl_ = std::move(impl);
  return out;
}

size_t SessionSource::size() const { return impl_->turns.size(); }
std::optional<double> SessionSource::arrival_s(size_t i) const {
  if (impl_->arrivals.empty()) return std::nullopt;
  return impl_->arrivals[i];
}
size_t SessionSource::turns(size_t i) const { return impl_->turns[i]; }
size_t SessionSource::total_turns() const { return impl_->total_turns; }
Session SessionSource::Get(size_t i) const {
  Session s = impl_->make(i);
  if (!impl_->arrivals.empty()) s.arrival_s = impl_->arrivals[i];
  return s;
}

std::string TraceBlockText(uint64_t hash_id, size_t n_tokens) {
  return SyntheticText(DeriveSeed(0, SeedTag::kTraceBlock, hash_id),
                       std::min(n_tokens, kTraceBlockTokens));
}

Result<SessionSource> MakeSessionSource(const WorkloadSpec& spec) {
  if (spec.rate_rps < 0 || !std::isfinite(spec.rate_rps)) {
    return Status(ErrorCode::kInvalidArgument, "rate_rps must be >= 0").WithParam("rate_rps");
  }
  if (spec.burst_size > 0 && !(spec.burst_interval_s > 0 && spec.burst_spread_s >= 0)) {
    return Status(ErrorCode::kInvalidArgument, "bursts need an interval > 0 and a spread >= 0")
        .WithParam("burst_interval_s");
  }
  auto impl = std::make_shared<SessionSource::Impl>();
  size_t n = spec.sessions;
  if (spec.name == "trace") {
    if (!(spec.speed > 0)) {
      return Status(ErrorCode::kInvalidArgument, "speed must be > 0").WithParam("speed");
    }
    auto lines = internal::ReadTrace(spec);
    if (!lines.ok()) return lines.status();
    n = lines->size();
    for (const auto& l : *lines) impl->arrivals.push_back(l.arrival_s);
    auto held = std::make_shared<const std::vector<internal::TraceLine>>(std::move(*lines));
    impl->make = [held](size_t i) { return internal::TraceLineSession((*held)[i]); };
    impl->turns.assign(n, 1);
  } else {
    if (spec.sessions == 0) {
      return Status(ErrorCode::kInvalidArgument, "sessions must be > 0").WithParam("sessions");
    }
    if (spec.name == "shared-prefix" || spec.name == "independent") {
      if (spec.shared_prefix.prefixes == 0 || spec.shared_prefix.output_tokens < 1 ||
          spec.shared_prefix.prefix_tokens + spec.shared_prefix.suffix_tokens == 0) {
        return Status(ErrorCode::kInvalidArgument,
                      "shared_prefix needs prefixes >= 1, output_tokens >= 1 and a non-empty prompt")
            .WithParam("shared_prefix");
      }
      impl->make = SingleTurn(spec, spec.name == "shared-prefix");
      impl->turns.assign(n, 1);
    } else if (spec.name == "multiturn") {
      if (spec.multiturn.turns == 0) {
        return Status(ErrorCode::kInvalidArgument, "multiturn needs >= 1 turn")
            .WithParam("multiturn");
      }
      impl->make = Multiturn(spec);
      impl->turns.assign(n, static_cast<uint32_t>(spec.multiturn.turns));
    } else {
      return Status(ErrorCode::kInvalidArgument,
                    "unknown workload '" + spec.name +
                        "' (shared-prefix, independent, multiturn, trace)")
          .WithParam("workload");
    }
  }
  for (uint32_t t : impl->turns) impl->total_turns += t;
  if (spec.rate_rps > 0) {
    impl->arrivals = PoissonArrivals(n, spec.rate_rps, spec.seed);
  } else if (spec.burst_size > 0 && spec.name != "trace") {
    impl->arrivals = BurstArrivals(n, spec.burst_size, spec.burst_interval_s, spec.burst_spread_s);
  }
  SessionSource out;
  out.impl_ = std::move(impl);
  return out;
}

Result<std::vector<Session>> MakeWorkload(const WorkloadSpec& spec) {
  auto source = MakeSessionSource(spec);
  if (!source.ok()) return source.status();
  std::vector<Session> out;
  out.reserve(source->size());
  for (size_t i = 0; i < source->size(); ++i) out.push_back(source->Get(i));
  return out;
}

std::vector<ChatMessage> MessagesForTurn(const Session& s, size_t k,
                                         const std::vector<std::string>& replies) {
  std::vector<ChatMessage> out;
  if (!s.system_prompt.empty()) out.push_back({"system", s.system_prompt});
  for (size_t j = 0; j < k && j < s.turns.size(); ++j) {
    out.push_back({"user", s.turns[j].user_text});
    out.push_back({"assistant", j < replies.size() ? replies[j] : std::string()});
  }
  if (k < s.turns.size()) out.push_back({"user", s.turns[k].user_text});
  return out;
}

}  // namespace kinference::workload
