// DrawRandomScenario and NominalCapacityRps of sim/random_scenario.h (the runner and the
// table: random_runner.cc). Ranges and why: docs/simulator.md, "Random scenarios".
#include "sim/random_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/tokenizer.h"
#include "engine/profile.h"
#include "routing/strategy.h"

namespace kinference::sim {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Draws from one splitmix64 stream (the only source of randomness of a scenario).
class Draw {
 public:
  explicit Draw(uint64_t seed) : state_(seed ^ 0x7a6e0d0c5eedull) {}
  uint64_t Next() { return routing::SplitMix64(state_); }
  double U() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Uniform(double a, double b) { return a + (b - a) * U(); }
  double LogUniform(double a, double b) { return a * std::pow(b / a, U()); }
  size_t Int(size_t a, size_t b) { return a + static_cast<size_t>(Next() % (b - a + 1)); }
  bool Chance(double p) { return U() < p; }
  double Exp(double rate) { return -std::log(1 - U()) / rate; }

 private:
  uint64_t state_;
};

// A shipped GPU profile at `speed` times its speed (every engine-time term / speed; the
// CPU-side step overhead and front end unchanged). cpu-qwen2-tiny serves another model,
// so it is never mixed with the GPU profiles, and its millisecond steps would make a
// simulated minute cost ~50,000 steps per replica: it is not drawn.
engine::HardwareProfile ScaledProfile(const std::string& base, double speed) {
  engine::HardwareProfile p = *engine::ProfileByName(base);
  for (double* x : {&p.prefill_s_per_token, &p.attn_s_per_token_ctx, &p.decode_base_s,
                    &p.decode_s_per_seq, &p.decode_s_per_ctx_token})
    *x /= speed;
  return p;
}

struct Kind {
  std::string label;  // "h100", "l40sx0.62"
  engine::HardwareProfile profile;
};

Kind DrawKind(Draw& d, bool maybe_unscaled) {
  const bool h100 = d.Chance(0.5);
  const std::string base = h100 ? "h100-27b-fp8" : "l40s-27b-fp8";
  const double speed = maybe_unscaled && d.Chance(0.5) ? 1.0 : d.LogUniform(0.5, 2.0);
  Kind k;
  k.label =
      std::string(h100 ? "h100" : "l40s") + (speed == 1.0 ? "" : fmt::format("x{:.2f}", speed));
  k.profile = ScaledProfile(base, speed);
  k.profile.name += k.label.substr(4);
  return k;
}

// Index in [0, n) with probability proportional to 1 / (i + 1)^s.
size_t Zipf(Draw& d, const std::vector<double>& cumulative) {
  const double u = d.U() * cumulative.back();
  return static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) -
                             cumulative.begin());
}

// The prompt population: what each request's prompt is made of.
struct Population {
  std::string family;
  std::string line;
  std::vector<std::string> shared;  // shared texts: prefixes, system prompts, documents
  std::vector<double> cumulative;   // popularity of `shared` (cumulative weights)
  size_t unique_tokens = 0;         // mean unique tokens per request (user message, suffix)
  size_t turns = 1;
  double think_s = 0;
  bool shared_in_system = false;  // the shared text is the system prompt (else in the user turn)
  bool unique_system = false;     // multiturn: each session has its own system prompt
  size_t system_tokens = 0;       // multiturn
  double shared_tokens = 0;       // mean shared tokens per request
  double shared_distinct = 0;     // tokens of all shared texts together
};

std::vector<double> Cumulative(size_t n, double s) {
  std::vector<double> c(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) c[i] = sum += 1.0 / std::pow(static_cast<double>(i + 1), s);
  return c;
}

Population DrawPopulation(Draw& d, size_t max_prompt_tokens) {
  Population p;
  auto add_shared = [&](size_t tokens) {
    p.shared.push_back(SyntheticText(d.Next(), tokens));
    p.shared_distinct += static_cast<double>(tokens);
  };
  switch (d.Int(0, 4)) {
    case 0: {
      p.family = "huge-prefixes";
      const size_t n = d.Int(1, 4);
      const double tokens = d.LogUniform(8000, 48000);
      for (size_t i = 0; i < n; ++i) add_shared(static_cast<size_t>(tokens * d.Uniform(0.8, 1.2)));
      p.cumulative = Cumulative(n, 0);
      p.unique_tokens = d.Int(64, 512);
      p.shared_tokens = p.shared_distinct / static_cast<double>(n);
      p.line = fmt::format("huge-prefixes({}x{:.0f},suffix={})", n, tokens, p.unique_tokens);
      break;
    }
    case 1: {
      p.family = "zipf-system";
      const size_t n = static_cast<size_t>(std::lround(d.LogUniform(8, 200)));
      const double tokens = d.LogUniform(500, 6000);
      const double s = d.Uniform(0.8, 1.4);
      for (size_t i = 0; i < n; ++i) add_shared(static_cast<size_t>(tokens * d.Uniform(0.8, 1.2)));
      p.cumulative = Cumulative(n, s);
      p.shared_in_system = true;
      p.unique_tokens = static_cast<size_t>(d.LogUniform(50, 1500));
      p.shared_tokens = tokens;
      p.line =
          fmt::format("zipf-system({}x{:.0f},s={:.2f},user={})", n, tokens, s, p.unique_tokens);
      break;
    }
    case 2: {
      p.family = "multiturn";
      p.turns = d.Int(2, 10);
      p.system_tokens = static_cast<size_t>(d.LogUniform(200, 4000));
      p.unique_tokens = static_cast<size_t>(d.LogUniform(50, 1500));
      p.think_s = d.Uniform(0.5, 10);
      const size_t systems = d.Chance(0.5) ? d.Int(1, 8) : 0;
      for (size_t i = 0; i < systems; ++i) add_shared(p.system_tokens);
      p.unique_system = systems == 0;
      p.shared_in_system = true;
      if (systems > 0) p.cumulative = Cumulative(systems, 0);
      p.shared_tokens = systems > 0 ? static_cast<double>(p.system_tokens) : 0;
      p.line = fmt::format("multiturn(turns={},system={}{},user={},think={:.1f}s)", p.turns,
                           p.system_tokens, systems > 0 ? fmt::format(" of {}", systems) : "",
                           p.unique_tokens, p.think_s);
      break;
    }
    case 3: {
      p.family = "no-reuse";
      p.unique_tokens = static_cast<size_t>(d.LogUniform(200, 16000));
      p.line = fmt::format("no-reuse(prompt={})", p.unique_tokens);
      break;
    }
    default: {
      p.family = "long-context";
      const double hi = std::min(128000.0, static_cast<double>(max_prompt_tokens));
      const double tokens = d.LogUniform(std::min(32000.0, hi), hi);
      const size_t reuse = d.Int(1, 8);
      p.unique_tokens = d.Int(50, 300);
      p.shared_tokens = tokens;
      // Documents are drawn once the request count is known (DrawSessions): `reuse`
      // requests per document on average.
      p.turns = 1;
      p.system_tokens = reuse;  // stands for the mean reuse until DrawSessions
      p.line = fmt::format("long-context(doc={:.0f},asked~{}x,question={})", tokens, reuse,
                           p.unique_tokens);
      break;
    }
  }
  return p;
}

// The uncached and cached tokens a request brings on average, for the nominal capacity:
// its own tokens, and of the shared ones at most what prefilling each shared text once per
// replica amortises over the requests.
std::pair<double, double> MeanWork(const Population& p, size_t replicas, size_t requests,
                                   double output) {
  double uncached = static_cast<double>(p.unique_tokens), context = 0;
  if (p.family == "multiturn") {
    const double turns = static_cast<double>(p.turns);
    const double history = static_cast<double>(p.unique_tokens) + output;
    uncached = history * (turns - 1) / turns + static_cast<double>(p.unique_tokens) / turns +
               (p.unique_system ? static_cast<double>(p.system_tokens) / turns : 0);
    context = static_cast<double>(p.system_tokens) + history * (turns - 1) / 2;
  } else if (p.family == "no-reuse") {
    return {uncached, 0};
  }
  const double distinct = p.family == "long-context"
                              ? p.shared_tokens * std::ceil(static_cast<double>(requests) /
                                                            static_cast<double>(p.system_tokens))
                              : p.shared_distinct;
  const double amortised =
      std::min(p.shared_tokens, distinct * static_cast<double>(replicas) / requests);
  return {uncached + amortised, context + p.shared_tokens - amortised};
}

std::string OutputFamily(double mean) {
  return mean < 64 ? "short" : mean <= 256 ? "medium" : "long";
}

}  // namespace

double NominalCapacityRps(const std::vector<ReplicaSpec>& replicas, double uncached, double context,
                          double output) {
  constexpr double kBatch = 16;
  double rps = 0;
  for (const auto& r : replicas) {
    const auto& p = r.profile;
    const double chunks = std::ceil(uncached / std::max(1, p.max_num_batched_tokens));
    const double prefill = chunks * p.step_overhead_s + p.prefill_s_per_token * uncached +
                           p.attn_s_per_token_ctx * uncached * (context + uncached / 2);
    const double per_token = (p.step_overhead_s + p.decode_base_s) / kBatch + p.decode_s_per_seq +
                             p.decode_s_per_ctx_token * (context + uncached + output / 2);
    rps += 1.0 / (prefill + output * per_token);
  }
  return rps;
}

RandomScenario DrawRandomScenario(uint64_t seed) {
  Draw d(seed);
  RandomScenario s;
  s.seed = seed;

  // Pool.
  const size_t n = std::min<size_t>(64, static_cast<size_t>(d.LogUniform(2, 65)));
  const bool homogeneous = d.Chance(0.4);
  std::vector<Kind> kinds;
  if (homogeneous) {
    kinds.push_back(DrawKind(d, true));
  } else {
    const size_t k = d.Int(2, std::min<size_t>(3, n));
    for (size_t i = 0; i < k; ++i) kinds.push_back(DrawKind(d, false));
  }
  std::vector<size_t> count(kinds.size(), 1);
  std::vector<double> weight(kinds.size());
  for (double& w : weight) w = d.Uniform(0.2, 1);
  const std::vector<double> cumulative_weight = [&] {
    std::vector<double> c(weight.size());
    std::partial_sum(weight.begin(), weight.end(), c.begin());
    return c;
  }();
  for (size_t i = kinds.size(); i < n; ++i) ++count[Zipf(d, cumulative_weight)];
  std::string pool_line;
  size_t min_kv_tokens = SIZE_MAX;
  for (size_t k = 0; k < kinds.size(); ++k) {
    for (size_t i = 0; i < count[k]; ++i) {
      ReplicaSpec r;
      r.id = fmt::format("{}/{}", kinds[k].label, i);
      r.pool = kinds[k].label;
      r.profile = kinds[k].profile;
      s.options.replicas.push_back(std::move(r));
    }
    const auto& p = kinds[k].profile;
    min_kv_tokens = std::min(min_kv_tokens, static_cast<size_t>(p.num_gpu_blocks) * p.block_size);
    pool_line += fmt::format("{}{} {}", k ? ", " : "", count[k], kinds[k].label);
  }
  s.families.emplace_back("pool", n <= 4 ? "small" : n <= 16 ? "medium" : "large");
  s.families.emplace_back("profiles", homogeneous ? "homogeneous" : "mixed");

  // Arrivals, prompts, outputs, load.
  const size_t arrivals = d.Int(0, 2);
  const double mean_output = d.LogUniform(16, 1024);
  // A long document and its answer fit the smallest KV cache four times over.
  const size_t max_prompt =
      std::min<size_t>(128000, min_kv_tokens / 4 > 2 * static_cast<size_t>(mean_output)
                                   ? min_kv_tokens / 4 - 2 * static_cast<size_t>(mean_output)
                                   : 1000);
  Population pop = DrawPopulation(d, max_prompt);
  const double load = d.Uniform(0.3, 1.5);
  const size_t gateways = d.Int(1, 4);
  size_t requests = 120;
  double capacity = 0, rate = 0;
  for (int iter = 0; iter < 3; ++iter) {  // the requests' count amortises the shared prefills
    auto [uncached, context] = MeanWork(pop, n, requests, mean_output);
    capacity = NominalCapacityRps(s.options.replicas, uncached, context, mean_output);
    rate = load * capacity;
    requests = std::clamp<size_t>(static_cast<size_t>(std::lround(rate * kRandomSpanS)),
                                  kRandomMinRequests, kRandomMaxRequests);
  }
  const size_t units = (requests + pop.turns - 1) / pop.turns;  // sessions
  const double unit_rate = rate / static_cast<double>(pop.turns);
  if (pop.family == "long-context") {
    const size_t reuse = pop.system_tokens;
    const size_t docs = (units + reuse - 1) / reuse;
    for (size_t i = 0; i < docs; ++i) {
      const size_t t = static_cast<size_t>(pop.shared_tokens * d.Uniform(0.75, 1.0));
      pop.shared.push_back(SyntheticText(d.Next(), t));
      pop.shared_distinct += static_cast<double>(t);
    }
    pop.cumulative = Cumulative(docs, 0);
  }

  // Arrival times of the sessions, and the shared text each one uses.
  std::vector<double> at(units);
  std::vector<size_t> group(units, 0);
  auto popular = [&] { return pop.cumulative.empty() ? size_t{0} : Zipf(d, pop.cumulative); };
  std::string arrivals_line;
  if (arrivals == 0) {
    double t = 0;
    for (size_t u = 0; u < units; ++u) {
      at[u] = t;
      t += d.Exp(unit_rate);
      group[u] = popular();
    }
    arrivals_line = "poisson";
  } else if (arrivals == 1) {
    const size_t size = std::min(units, d.Int(4, 80));
    const size_t mix = d.Int(1, 8);
    const double spread = d.LogUniform(0.01, 1.0);
    const double interval = static_cast<double>(size) / unit_rate;
    std::vector<size_t> chosen(mix);
    for (size_t u = 0; u < units; ++u) {
      const size_t b = u / size, j = u % size;
      if (j == 0)
        for (size_t& c : chosen) c = popular();
      at[u] = static_cast<double>(b) * interval +
              spread * static_cast<double>(j) / static_cast<double>(size);
      group[u] = chosen[d.Int(0, mix - 1)];
    }
    arrivals_line = fmt::format("bursty(size={},mix={},spread={:.2f}s)", size, mix, spread);
  } else {
    // Thinning (Lewis-Shedler) of a Poisson process at the peak rate: rate(t) = mean x
    // (0.25 + 1.5 sin^2(pi t / T)), T the span at the mean rate: 0.25x at the ends, 1.75x
    // in the middle, the mean over [0, T] the mean rate.
    const double span = static_cast<double>(units) / unit_rate;
    double t = 0;
    for (size_t u = 0; u < units;) {
      t += d.Exp(1.75 * unit_rate);
      const double sn = std::sin(kPi * t / span);
      if (d.U() * 1.75 <= 0.25 + 1.5 * sn * sn) {
        at[u] = t;
        group[u] = popular();
        ++u;
      }
    }
    arrivals_line = "diurnal";
  }
  s.families.emplace_back("arrivals", arrivals == 0   ? "poisson"
                                      : arrivals == 1 ? "bursty"
                                                      : "diurnal");
  s.families.emplace_back("prompts", pop.family);
  s.families.emplace_back("outputs", OutputFamily(mean_output));
  s.families.emplace_back("load", load < 0.8 ? "under" : load <= 1.1 ? "near" : "over");
  s.families.emplace_back("gateways", std::to_string(gateways));

  // Sessions.
  auto own = [&](size_t mean) {
    return SyntheticText(
        d.Next(),
        std::max<size_t>(1, static_cast<size_t>(std::lround(mean * d.Uniform(0.5, 1.5)))));
  };
  auto output = [&] {
    return std::max(1, static_cast<int>(std::lround(mean_output * d.Uniform(0.5, 1.5))));
  };
  for (size_t u = 0; u < units; ++u) {
    workload::Session session;
    session.id = fmt::format("r{}-{}", seed, u);
    session.arrival_s = at[u];
    const std::string* shared = pop.shared.empty() ? nullptr : &pop.shared[group[u]];
    if (pop.family == "multiturn") {
      session.system_prompt = shared ? *shared : SyntheticText(d.Next(), pop.system_tokens);
      for (size_t k = 0; k < pop.turns; ++k)
        session.turns.push_back(workload::Turn{own(pop.unique_tokens), output(), pop.think_s});
    } else {
      workload::Turn turn{"", output(), 0};
      if (shared && pop.shared_in_system) session.system_prompt = *shared;
      if (shared && !pop.shared_in_system) turn.user_text = *shared;
      turn.user_text += own(pop.unique_tokens);
      session.turns.push_back(std::move(turn));
    }
    s.requests += session.turns.size();
    s.sessions.push_back(std::move(session));
  }
  const double span = s.sessions.empty() ? 0 : at.back();

  // Gateways and restarts.
  s.options.routers = gateways;
  std::string restarts_line = "none";
  if (d.Chance(0.25)) {
    const size_t k = d.Int(1, std::max<size_t>(1, n / 4));
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    for (size_t i = 0; i < k; ++i) std::swap(order[i], order[d.Int(i, n - 1)]);
    restarts_line.clear();
    for (size_t i = 0; i < k; ++i) {
      RestartSpec r{s.options.replicas[order[i]].id, span * d.Uniform(0.2, 0.7), d.Uniform(5, 30)};
      restarts_line +=
          fmt::format("{}{}@{:.0f}s+{:.0f}s", i ? "," : "", r.replica, r.at_s, r.downtime_s);
      s.options.restarts.push_back(std::move(r));
    }
  }
  s.families.emplace_back("restarts", s.options.restarts.empty() ? "none" : "some");
  s.capacity_rps = capacity;
  s.rate_rps = rate;
  s.line = fmt::format(
      "seed={} pool={} {}({}) arrivals={} prompts={} out={:.0f} load={:.2f} rate={:.3g}/s "
      "requests={} gw={} restarts={}",
      seed, n, homogeneous ? "homogeneous" : "mixed", pool_line, arrivals_line, pop.line,
      mean_output, load, rate, s.requests, gateways, restarts_line);
  return s;
}

}  // namespace kinference::sim
