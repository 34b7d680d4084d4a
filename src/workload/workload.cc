#include "workload/workload.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <random>

#include "common/tokenizer.h"

namespace kinference::workload {
namespace {

// Tags that keep the seed streams of different text kinds apart.
enum class SeedTag : uint64_t {
  kPrefix = 1,
  kSuffix = 2,
  kSystem = 3,
  kUser = 4,
  kTraceBlock = 5,
  kTraceFiller = 6,
  kArrivals = 7,
  kPrefixChoice = 8,
};

// SplitMix64 finaliser (Steele et al., "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a bijective 64-bit mix.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t DeriveSeed(uint64_t seed, SeedTag tag, uint64_t a, uint64_t b = 0) {
  return Mix64(Mix64(Mix64(seed ^ Mix64(static_cast<uint64_t>(tag))) ^ a) ^ b);
}

// Uniform in [0, 1) from the top 53 bits (std::mt19937_64 output is fixed by the
// standard; std:: distributions are not, so they are avoided for determinism).
double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Poisson process of `rate` per second: arrival times with exponential gaps, first at 0.
void AssignPoissonArrivals(std::vector<Session>& sessions, double rate, uint64_t seed) {
  std::mt19937_64 rng(DeriveSeed(seed, SeedTag::kArrivals, 0));
  double t = 0;
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (i > 0) t += -std::log1p(-Uniform01(rng)) / rate;
    sessions[i].arrival_s = t;
  }
}

std::vector<Session> SingleTurn(const WorkloadSpec& spec, bool shared) {
  const SharedPrefixShape& sp = spec.shared_prefix;
  std::vector<Session> out;
  out.reserve(spec.sessions);
  std::vector<std::string> prefixes;
  if (shared) {
    for (size_t p = 0; p < sp.prefixes; ++p) {
      prefixes.push_back(
          SyntheticText(DeriveSeed(spec.seed, SeedTag::kPrefix, p), sp.prefix_tokens));
    }
  }
  std::mt19937_64 choice(DeriveSeed(spec.seed, SeedTag::kPrefixChoice, 0));
  for (size_t i = 0; i < spec.sessions; ++i) {
    Session s;
    Turn t;
    t.max_tokens = sp.output_tokens;
    if (shared) {
      size_t p = choice() % sp.prefixes;
      s.id = fmt::format("sp-{:05d}-p{:02d}", i, p);
      t.user_text = prefixes[p];
    } else {
      s.id = fmt::format("ind-{:05d}", i);
      t.user_text =
          SyntheticText(DeriveSeed(spec.seed, SeedTag::kPrefix, 1000000 + i), sp.prefix_tokens);
    }
    t.user_text += SyntheticText(DeriveSeed(spec.seed, SeedTag::kSuffix, i), sp.suffix_tokens);
    s.turns.push_back(std::move(t));
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Session> Multiturn(const WorkloadSpec& spec) {
  const MultiturnShape& m = spec.multiturn;
  std::vector<Session> out;
  out.reserve(spec.sessions);
  for (size_t i = 0; i < spec.sessions; ++i) {
    Session s;
    s.id = fmt::format("mt-{:05d}", i);
    s.system_prompt = SyntheticText(DeriveSeed(spec.seed, SeedTag::kSystem, i), m.system_tokens);
    for (size_t k = 0; k < m.turns; ++k) {
      Turn t;
      t.user_text = SyntheticText(DeriveSeed(spec.seed, SeedTag::kUser, i, k), m.user_tokens);
      t.max_tokens = m.output_tokens;
      t.think_time_s = k == 0 ? 0.0 : m.think_time_s;
      s.turns.push_back(std::move(t));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// One trace line into a session; `line_no` is the 0-based line index in the file.
// `*conversation_key`: the line's second hash id (first when it has one), see
// WorkloadSpec::trace_sample.
Result<Session> TraceSession(std::string_view line, size_t line_no, const WorkloadSpec& spec,
                             double* timestamp_ms, uint64_t* conversation_key) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(line, ec);
  auto bad = [&](std::string what) {
    return Status(ErrorCode::kInvalidArgument,
                  fmt::format("{}:{}: {}", spec.trace_path, line_no + 1, what));
  };
  if (ec || !v.is_object()) return bad("not a JSON object");
  const auto& o = v.as_object();
  const auto* ts = o.if_contains("timestamp");
  const auto* in = o.if_contains("input_length");
  const auto* outlen = o.if_contains("output_length");
  const auto* ids = o.if_contains("hash_ids");
  if (!ts || !ts->is_number() || !in || !in->is_int64() || !outlen || !outlen->is_int64() || !ids ||
      !ids->is_array()) {
    return bad("needs timestamp, input_length, output_length, hash_ids");
  }
  *timestamp_ms = ts->to_number<double>(ec);
  int64_t input = in->as_int64();
  int64_t output = outlen->as_int64();
  if (input <= 0 || output <= 0) return bad("lengths must be positive");
  if (spec.max_output_tokens > 0 && output > spec.max_output_tokens) {
    output = spec.max_output_tokens;
  }
  Session s;
  s.id = fmt::format("trace-{:06d}", line_no);
  Turn t;
  t.max_tokens = static_cast<int>(output);
  size_t remaining = static_cast<size_t>(input);
  const auto& id_array = ids->as_array();
  *conversation_key = 0;
  if (!id_array.empty()) {
    const auto& key = id_array[std::min<size_t>(1, id_array.size() - 1)];
    if (key.is_int64()) *conversation_key = static_cast<uint64_t>(key.as_int64());
    if (key.is_uint64()) *conversation_key = key.as_uint64();
  }
  for (const auto& id : id_array) {
    if (remaining == 0) break;
    if (!id.is_int64() && !id.is_uint64()) return bad("hash_ids must be integers");
    uint64_t h = id.is_int64() ? static_cast<uint64_t>(id.as_int64()) : id.as_uint64();
    size_t n = std::min(remaining, kTraceBlockTokens);
    t.user_text += TraceBlockText(h, n);
    remaining -= n;
  }
  if (remaining > 0) {
    t.user_text += SyntheticText(DeriveSeed(0, SeedTag::kTraceFiller, line_no), remaining);
  }
  s.turns.push_back(std::move(t));
  return s;
}

Result<std::vector<Session>> Trace(const WorkloadSpec& spec) {
  std::ifstream f(spec.trace_path);
  if (!f) return Status(ErrorCode::kNotFound, "cannot read trace file " + spec.trace_path);
  std::vector<Session> out;
  std::string line;
  double first_ts = 0;
  for (size_t line_no = 0; std::getline(f, line); ++line_no) {
    if (line_no < spec.trace_offset) continue;
    if (spec.sessions > 0 && out.size() >= spec.sessions) break;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    double ts = 0;
    uint64_t key = 0;
    auto s = TraceSession(line, line_no, spec, &ts, &key);
    if (!s.ok()) return s.status();
    if (spec.trace_sample > 1 && key % spec.trace_sample != 0) continue;
    if (out.empty()) first_ts = ts;
    s->arrival_s = std::max(0.0, (ts - first_ts) / 1000.0 / spec.speed);
    out.push_back(std::move(*s));
  }
  if (out.empty()) {
    return Status(ErrorCode::kInvalidArgument, fmt::format("trace {} has no lines at offset {}",
                                                           spec.trace_path, spec.trace_offset));
  }
  return out;
}

}  // namespace

std::string TraceBlockText(uint64_t hash_id, size_t n_tokens) {
  return SyntheticText(DeriveSeed(0, SeedTag::kTraceBlock, hash_id),
                       std::min(n_tokens, kTraceBlockTokens));
}

Result<std::vector<Session>> MakeWorkload(const WorkloadSpec& spec) {
  if (spec.rate_rps < 0 || !std::isfinite(spec.rate_rps)) {
    return Status(ErrorCode::kInvalidArgument, "rate_rps must be >= 0").WithParam("rate_rps");
  }
  std::vector<Session> sessions;
  if (spec.name == "trace") {
    if (!(spec.speed > 0)) {
      return Status(ErrorCode::kInvalidArgument, "speed must be > 0").WithParam("speed");
    }
    auto r = Trace(spec);
    if (!r.ok()) return r.status();
    sessions = std::move(*r);
  } else {
    if (spec.sessions == 0) {
      return Status(ErrorCode::kInvalidArgument, "sessions must be > 0").WithParam("sessions");
    }
    const SharedPrefixShape& sp = spec.shared_prefix;
    if ((spec.name == "shared-prefix" || spec.name == "independent") &&
        (sp.prefixes == 0 || sp.output_tokens < 1 || sp.prefix_tokens + sp.suffix_tokens == 0)) {
      return Status(ErrorCode::kInvalidArgument,
                    "shared_prefix needs prefixes >= 1, output_tokens >= 1 and a non-empty prompt")
          .WithParam("shared_prefix");
    }
    if (spec.name == "shared-prefix") {
      sessions = SingleTurn(spec, /*shared=*/true);
    } else if (spec.name == "independent") {
      sessions = SingleTurn(spec, /*shared=*/false);
    } else if (spec.name == "multiturn") {
      sessions = Multiturn(spec);
    } else {
      return Status(ErrorCode::kInvalidArgument,
                    "unknown workload '" + spec.name +
                        "' (shared-prefix, independent, multiturn, trace)")
          .WithParam("workload");
    }
  }
  if (spec.rate_rps > 0) AssignPoissonArrivals(sessions, spec.rate_rps, spec.seed);
  return sessions;
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
