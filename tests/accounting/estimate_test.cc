#include "accounting/estimate.h"

#include <gtest/gtest.h>

namespace kinference::accounting {
namespace {

TEST(Estimate, ReservesPromptCharactersOverCharsPerTokenAndMaxTokens) {
  EstimateConfig c{.chars_per_token = 4, .output_tokens = 256};
  EXPECT_EQ(EstimatePromptTokens(401, c), 101);
  EXPECT_EQ(EstimateOutputTokens(0, c), 256);
  EXPECT_EQ(EstimateOutputTokens(32, c), 32);
}

TEST(Estimate, ReservesTheCostAtTheDearestCandidate) {
  EstimateConfig c{.chars_per_token = 4, .output_tokens = 100};
  Price cheap{.input = 1'000'000'000, .output = 2'000'000'000};  // 1 and 2 USD/M
  Price dear{.input = 3'000'000'000, .output = 15'000'000'000};  // 3 and 15 USD/M
  Amounts a = ReservationFor(4000, 0, c, {cheap, std::nullopt, dear});
  EXPECT_EQ(a.input_tokens, 1000);
  EXPECT_EQ(a.output_tokens, 100);
  EXPECT_EQ(a.cost, 1000 * 3000 + 100 * 15000);  // nano-USD: 3,000 per token in, 15,000 out
  EXPECT_EQ(ReservationFor(4000, 0, c, {std::nullopt}).cost, 0);
}

TEST(Estimate, SettlesWithUncachedInput) {
  Amounts a = SettledAmounts({.prompt = 1000, .cached = 700, .completion = 20}, 55);
  EXPECT_EQ(a.input_tokens, 300);
  EXPECT_EQ(a.output_tokens, 20);
  EXPECT_EQ(a.cost, 55);
}

}  // namespace
}  // namespace kinference::accounting
