#include "workload/workload.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/tokenizer.h"

namespace kinference::workload {
namespace {

std::vector<Session> Make(WorkloadSpec spec) {
  auto r = MakeWorkload(spec);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : std::vector<Session>{};
}

size_t CommonTokenPrefix(std::string_view a, std::string_view b) {
  auto ta = Tokenize(a), tb = Tokenize(b);
  size_t n = 0;
  while (n < ta.size() && n < tb.size() && ta[n] == tb[n]) ++n;
  return n;
}

TEST(WorkloadTest, SharedPrefixExactLengthsAndSharedPrefixes) {
  auto s = Make({.name = "shared-prefix", .sessions = 60, .seed = 7});
  ASSERT_EQ(s.size(), 60u);
  std::map<std::string, std::vector<size_t>> by_prefix;  // prefix text -> session indices
  for (size_t i = 0; i < s.size(); ++i) {
    ASSERT_EQ(s[i].turns.size(), 1u);
    const auto& t = s[i].turns[0];
    EXPECT_EQ(t.max_tokens, 256);
    EXPECT_FALSE(s[i].arrival_s.has_value());
    EXPECT_TRUE(s[i].system_prompt.empty());
    EXPECT_EQ(CountTokens(t.user_text), kSharedPrefixTokens + kUniqueSuffixTokens);
    auto lengths = TokenLengths(t.user_text);
    size_t prefix_bytes = 0;
    for (size_t k = 0; k < kSharedPrefixTokens; ++k) prefix_bytes += lengths[k];
    by_prefix[t.user_text.substr(0, prefix_bytes)].push_back(i);
  }
  // 60 draws among 24 prefixes: several distinct prefixes, at least one reused.
  EXPECT_LE(by_prefix.size(), kSharedPrefixCount);
  EXPECT_GE(by_prefix.size(), 10u);
  EXPECT_LT(by_prefix.size(), s.size());
  for (const auto& [prefix, idx] : by_prefix) {
    if (idx.size() < 2) continue;
    const auto& a = s[idx[0]].turns[0].user_text;
    const auto& b = s[idx[1]].turns[0].user_text;
    // Same 16,000-token prefix, then the unique suffixes diverge at once.
    size_t common = CommonTokenPrefix(a, b);
    EXPECT_GE(common, kSharedPrefixTokens);
    EXPECT_LE(common, kSharedPrefixTokens + 1);
  }
}

TEST(WorkloadTest, SharedPrefixShapeOverridesLengthsAndPrefixCount) {
  WorkloadSpec spec{.name = "shared-prefix", .sessions = 40, .seed = 7};
  spec.shared_prefix = {
      .prefixes = 3, .prefix_tokens = 500, .suffix_tokens = 20, .output_tokens = 32};
  auto s = Make(spec);
  ASSERT_EQ(s.size(), 40u);
  std::map<std::string, int> prefixes;
  for (const auto& x : s) {
    const auto& t = x.turns[0];
    EXPECT_EQ(t.max_tokens, 32);
    EXPECT_EQ(CountTokens(t.user_text), 520u);
    auto lengths = TokenLengths(t.user_text);
    size_t prefix_bytes = 0;
    for (size_t k = 0; k < 500; ++k) prefix_bytes += lengths[k];
    ++prefixes[t.user_text.substr(0, prefix_bytes)];
  }
  EXPECT_EQ(prefixes.size(), 3u);  // 40 draws among 3: every prefix used

  spec.shared_prefix.prefixes = 0;
  EXPECT_EQ(MakeWorkload(spec).status().code(), ErrorCode::kInvalidArgument);
  spec.shared_prefix = {.output_tokens = 0};
  EXPECT_EQ(MakeWorkload(spec).status().code(), ErrorCode::kInvalidArgument);
}

TEST(WorkloadTest, IndependentPromptsShareNothing) {
  auto s = Make({.name = "independent", .sessions = 6, .seed = 3});
  ASSERT_EQ(s.size(), 6u);
  for (const auto& x : s) {
    EXPECT_EQ(CountTokens(x.turns[0].user_text), kSharedPrefixTokens + kUniqueSuffixTokens);
  }
  for (size_t i = 0; i < s.size(); ++i) {
    for (size_t j = i + 1; j < s.size(); ++j) {
      EXPECT_LE(CommonTokenPrefix(s[i].turns[0].user_text, s[j].turns[0].user_text), 1u);
    }
  }
}

TEST(WorkloadTest, DeterministicBySeed) {
  for (std::string name : {"shared-prefix", "independent", "multiturn"}) {
    auto a = Make({.name = name, .sessions = 5, .rate_rps = 2.0, .seed = 11});
    auto b = Make({.name = name, .sessions = 5, .rate_rps = 2.0, .seed = 11});
    auto c = Make({.name = name, .sessions = 5, .rate_rps = 2.0, .seed = 12});
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].id, b[i].id);
      EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
      EXPECT_EQ(a[i].system_prompt, b[i].system_prompt);
      EXPECT_EQ(a[i].turns.back().user_text, b[i].turns.back().user_text);
    }
    EXPECT_NE(a[1].turns[0].user_text, c[1].turns[0].user_text) << name;
    EXPECT_NE(a[1].arrival_s, c[1].arrival_s) << name;
  }
}

TEST(WorkloadTest, PoissonArrivalsIncreaseAtRoughlyTheRate) {
  auto s = Make({.name = "independent", .sessions = 400, .rate_rps = 4.0, .seed = 5});
  ASSERT_EQ(s.size(), 400u);
  EXPECT_EQ(*s[0].arrival_s, 0.0);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_GE(*s[i].arrival_s, *s[i - 1].arrival_s);
  // 399 exponential gaps of mean 0.25 s: mean within +-20% (about 4 standard errors).
  double mean_gap = *s.back().arrival_s / 399.0;
  EXPECT_NEAR(mean_gap, 0.25, 0.05);
}

TEST(WorkloadTest, MultiturnShapeOverride) {
  WorkloadSpec spec{.name = "multiturn", .sessions = 1, .seed = 1};
  spec.multiturn = {
      .turns = 3, .system_tokens = 50, .user_tokens = 20, .output_tokens = 7, .think_time_s = 1.5};
  auto s = Make(spec);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(CountTokens(s[0].system_prompt), 50u);
  ASSERT_EQ(s[0].turns.size(), 3u);
  EXPECT_EQ(CountTokens(s[0].turns[2].user_text), 20u);
  EXPECT_EQ(s[0].turns[2].max_tokens, 7);
  EXPECT_EQ(s[0].turns[2].think_time_s, 1.5);
  // The defaults are the documented (fitted) shape.
  EXPECT_EQ(kMultiturnSystemTokens, 3500u);
  EXPECT_EQ(kMultiturnUserTokens, 1100u);
  EXPECT_EQ(kMultiturnOutputTokens, 160);
}

TEST(WorkloadTest, MultiturnShapeAndMessages) {
  auto s = Make({.name = "multiturn", .sessions = 2, .seed = 1});
  ASSERT_EQ(s.size(), 2u);
  const Session& a = s[0];
  EXPECT_EQ(CountTokens(a.system_prompt), kMultiturnSystemTokens);
  ASSERT_EQ(a.turns.size(), kMultiturnTurns);
  EXPECT_EQ(a.turns[0].think_time_s, 0.0);
  EXPECT_EQ(a.turns[1].think_time_s, kMultiturnThinkTimeS);
  for (const auto& t : a.turns) {
    EXPECT_EQ(CountTokens(t.user_text), kMultiturnUserTokens);
    EXPECT_EQ(t.max_tokens, kMultiturnOutputTokens);
  }
  // Conversations have distinct system prompts: the first turn has nothing to reuse.
  EXPECT_LE(CommonTokenPrefix(a.system_prompt, s[1].system_prompt), 1u);

  auto m0 = MessagesForTurn(a, 0, {});
  ASSERT_EQ(m0.size(), 2u);
  EXPECT_EQ(m0[0].role, "system");
  EXPECT_EQ(m0[1].role, "user");
  EXPECT_EQ(m0[1].content, a.turns[0].user_text);

  auto m2 = MessagesForTurn(a, 2, {"reply zero", "reply one"});
  ASSERT_EQ(m2.size(), 6u);
  std::vector<std::string> roles;
  for (const auto& m : m2) roles.push_back(m.role);
  EXPECT_EQ(roles,
            (std::vector<std::string>{"system", "user", "assistant", "user", "assistant", "user"}));
  EXPECT_EQ(m2[2].content, "reply zero");
  EXPECT_EQ(m2[4].content, "reply one");
  EXPECT_EQ(m2[5].content, a.turns[2].user_text);
  // History grows: turn 2's messages start with turn 1's messages.
  auto m1 = MessagesForTurn(a, 1, {"reply zero"});
  for (size_t i = 0; i < m1.size(); ++i) EXPECT_EQ(m1[i].content, m2[i].content);
}

TEST(WorkloadTest, SessionSourceGeneratesTheSameSessionsOnDemand) {
  for (std::string name : {"shared-prefix", "independent", "multiturn"}) {
    WorkloadSpec spec{.name = name, .sessions = 6, .rate_rps = 0.5, .seed = 4};
    spec.multiturn.turns = 3;
    auto all = Make(spec);
    auto source = MakeSessionSource(spec);
    ASSERT_TRUE(source.ok());
    ASSERT_EQ(source->size(), all.size());
    size_t turns = 0;
    for (size_t i = all.size(); i-- > 0;) {  // any order
      Session s = source->Get(i);
      EXPECT_EQ(s.id, all[i].id);
      EXPECT_EQ(s.arrival_s, all[i].arrival_s);
      EXPECT_EQ(source->arrival_s(i), all[i].arrival_s);
      EXPECT_EQ(s.system_prompt, all[i].system_prompt);
      ASSERT_EQ(s.turns.size(), all[i].turns.size());
      EXPECT_EQ(source->turns(i), all[i].turns.size());
      for (size_t k = 0; k < s.turns.size(); ++k)
        EXPECT_EQ(s.turns[k].user_text, all[i].turns[k].user_text);
      turns += s.turns.size();
    }
    EXPECT_EQ(source->total_turns(), turns);
  }
  auto held = SessionSource::FromSessions(Make({.name = "independent", .sessions = 2, .seed = 9}));
  EXPECT_EQ(held.size(), 2u);
  EXPECT_FALSE(held.arrival_s(0).has_value());
  EXPECT_EQ(CountTokens(held.Get(1).turns[0].user_text), kSharedPrefixTokens + kUniqueSuffixTokens);
}

TEST(WorkloadTest, BurstsShareOneNewPrefixEach) {
  WorkloadSpec spec{.name = "shared-prefix", .sessions = 9, .seed = 2};
  spec.burst_size = 3;
  spec.burst_interval_s = 60;
  spec.burst_spread_s = 0.01;
  spec.shared_prefix.prefixes = 3;
  spec.shared_prefix.prefix_tokens = 300;
  spec.shared_prefix.suffix_tokens = 20;
  spec.shared_prefix.output_tokens = 5;
  auto s = Make(spec);
  ASSERT_EQ(s.size(), 9u);
  for (size_t i = 0; i < s.size(); ++i) {
    const double burst_start = 60.0 * static_cast<double>(i / 3);
    EXPECT_NEAR(*s[i].arrival_s, burst_start + 0.005 * static_cast<double>(i % 3), 1e-12);
    EXPECT_EQ(CountTokens(s[i].turns[0].user_text), 320u);
    EXPECT_EQ(s[i].turns[0].max_tokens, 5);
  }
  // Within a burst one prefix; across bursts different ones.
  EXPECT_GE(CommonTokenPrefix(s[0].turns[0].user_text, s[2].turns[0].user_text), 300u);
  EXPECT_LE(CommonTokenPrefix(s[2].turns[0].user_text, s[3].turns[0].user_text), 1u);
  EXPECT_GE(CommonTokenPrefix(s[6].turns[0].user_text, s[8].turns[0].user_text), 300u);
  WorkloadSpec bad = spec;
  bad.burst_interval_s = 0;
  EXPECT_FALSE(MakeWorkload(bad).ok());
}

TEST(WorkloadTest, UnknownWorkloadIsInvalidArgument) {
  auto r = MakeWorkload({.name = "nope"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  auto t = MakeWorkload({.name = "trace", .trace_path = "/nonexistent/trace.jsonl"});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kNotFound);
}

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("kinference_trace_test_" + std::to_string(::getpid()) + ".jsonl");
    std::ofstream f(path_);
    f << R"({"timestamp": 1000, "input_length": 1100, "output_length": 500, "hash_ids": [0, 1, 2]})"
      << "\n"
      << R"({"timestamp": 3000, "input_length": 1300, "output_length": 90, "hash_ids": [0, 1, 3]})"
      << "\n"
      << R"({"timestamp": 4000, "input_length": 700, "output_length": 10, "hash_ids": [9]})"
      << "\n";
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(TraceTest, EqualHashIdsGiveEqualTextAndExactLengths) {
  auto s = Make({.name = "trace",
                 .sessions = 0,
                 .trace_path = path_.string(),
                 .speed = 2.0,
                 .max_output_tokens = 256});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(CountTokens(s[0].turns[0].user_text), 1100u);
  EXPECT_EQ(CountTokens(s[1].turns[0].user_text), 1300u);
  // 700 tokens from one 512-token block: the rest is unique filler.
  EXPECT_EQ(CountTokens(s[2].turns[0].user_text), 700u);
  EXPECT_EQ(s[0].turns[0].max_tokens, 256);  // clamped
  EXPECT_EQ(s[1].turns[0].max_tokens, 90);
  // Arrival relative to the first line, divided by speed.
  EXPECT_DOUBLE_EQ(*s[0].arrival_s, 0.0);
  EXPECT_DOUBLE_EQ(*s[1].arrival_s, 1.0);
  EXPECT_DOUBLE_EQ(*s[2].arrival_s, 1.5);
  // hash_ids [0, 1] shared: exactly 1,024 tokens in common, then blocks 2 and 3 differ.
  size_t common = CommonTokenPrefix(s[0].turns[0].user_text, s[1].turns[0].user_text);
  EXPECT_GE(common, 1024u);
  EXPECT_LE(common, 1025u);
  EXPECT_EQ(s[0].turns[0].user_text.substr(0, TraceBlockText(0).size()), TraceBlockText(0));
  EXPECT_LE(CommonTokenPrefix(s[0].turns[0].user_text, s[2].turns[0].user_text), 1u);
}

TEST_F(TraceTest, OffsetAndLimitTakeASlice) {
  auto s = Make({.name = "trace", .sessions = 1, .trace_path = path_.string(), .trace_offset = 1});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].id, "trace-000001");
  EXPECT_DOUBLE_EQ(*s[0].arrival_s, 0.0);
  EXPECT_EQ(CountTokens(s[0].turns[0].user_text), 1300u);
  auto past = MakeWorkload({.name = "trace", .trace_path = path_.string(), .trace_offset = 9});
  EXPECT_FALSE(past.ok());
}

TEST_F(TraceTest, SampleKeepsWholeConversationsByTheirSecondBlock) {
  // Lines 0 and 1 are one conversation (second hash id 1), line 2 a one-block prompt
  // keyed by its only id, 9. Sampling 1 in 3 drops the first conversation whole.
  auto s = Make({.name = "trace", .sessions = 0, .trace_path = path_.string(), .trace_sample = 3});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].id, "trace-000002");
  EXPECT_DOUBLE_EQ(*s[0].arrival_s, 0.0);  // relative to the first kept line
  auto none = MakeWorkload({.name = "trace", .trace_path = path_.string(), .trace_sample = 2});
  EXPECT_FALSE(none.ok());
}

TEST(TraceFileTest, SampledMooncakeSliceKeepsConversationTurnsTogether) {
  std::filesystem::path p = std::filesystem::path(KINFERENCE_SOURCE_DIR) /
                            "data/traces/mooncake_conversation_trace.jsonl";
  ASSERT_TRUE(std::filesystem::exists(p)) << "the repository ships the trace: " << p;
  auto s = Make({.name = "trace", .sessions = 60, .trace_path = p.string(), .trace_sample = 16});
  ASSERT_EQ(s.size(), 60u);
  // Some kept request must reuse a longer prefix of an earlier kept one than the shared
  // first block (512 tokens): its conversation's earlier turn was kept too.
  size_t best = 0;
  for (size_t i = 1; i < s.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      best = std::max(best, CommonTokenPrefix(s[i].turns[0].user_text, s[j].turns[0].user_text));
    }
  }
  EXPECT_GT(best, 2048u);
}

TEST(TraceFileTest, MooncakeTraceSliceHasExactLengths) {
  std::filesystem::path p = std::filesystem::path(KINFERENCE_SOURCE_DIR) /
                            "data/traces/mooncake_conversation_trace.jsonl";
  ASSERT_TRUE(std::filesystem::exists(p)) << "the repository ships the trace: " << p;
  auto s = Make({.name = "trace", .sessions = 3, .trace_path = p.string()});
  ASSERT_EQ(s.size(), 3u);
  // First lines of the release: 6,758 / 7,322 / 7,236 input tokens, sharing block 0.
  EXPECT_EQ(CountTokens(s[0].turns[0].user_text), 6758u);
  EXPECT_EQ(CountTokens(s[1].turns[0].user_text), 7322u);
  EXPECT_EQ(CountTokens(s[2].turns[0].user_text), 7236u);
  EXPECT_GE(CommonTokenPrefix(s[0].turns[0].user_text, s[1].turns[0].user_text), 512u);
}

}  // namespace
}  // namespace kinference::workload
