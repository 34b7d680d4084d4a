#include "accounting/estimate.h"

#include <gtest/gtest.h>

namespace kinference::accounting {
namespace {

TEST(Estimate, ReservesPromptCharactersOverCharsPerTokenAndMaxTokens) {
  EstimateConfig c{.chars_per_token = 4};
  EXPECT_EQ(EstimatePromptTokens(401, c), 101);
  EXPECT_EQ(WorstCaseOutputTokens(32, "m", c), 32);
}

TEST(Estimate, WithoutMaxTokensReservesTheModelsWholeContextWindow) {
  EstimateConfig c{
      .chars_per_token = 4, .context_tokens = 131072, .model_context_tokens = {{"small", 8192}}};
  EXPECT_EQ(WorstCaseOutputTokens(0, "small", c), 8192);
  EXPECT_EQ(WorstCaseOutputTokens(0, "other", c), 131072);
}

// Item 2 of issue 25: the cost of a request without max_tokens was estimated at 256
// output tokens, so an upstream generating more overshot the budget; the worst case is
// the context window, at the picked endpoint's price.
TEST(Estimate, ReservesTheWorstCaseCostAtThePickedEndpointsPrice) {
  EstimateConfig c{.chars_per_token = 4, .context_tokens = 4096};
  Price dear{.input = 3'000'000'000, .output = 15'000'000'000};  // 3 and 15 USD/M
  Amounts a = ReservationFor(4000, 0, "m", c, dear, {});
  EXPECT_EQ(a.input_tokens, 1000);
  EXPECT_EQ(a.output_tokens, 4096);
  EXPECT_EQ(a.cost, 1000 * 3000 + 4096 * 15000);  // nano-USD: 3,000 per token in, 15,000 out
  Price cheap{.input = 100'000'000, .output = 400'000'000};  // 0.10 and 0.40 USD/M
  EXPECT_EQ(ReservationFor(4000, 50, "m", c, cheap, {}).cost, 1000 * 100 + 50 * 400);
  EXPECT_EQ(ReservationFor(4000, 0, "m", c, std::nullopt, {}).cost, 0);
}

TEST(Estimate, OutputBucketTakesAtMostItsCapacityWhenMaxTokensIsUnset) {
  EstimateConfig c{.chars_per_token = 4, .context_tokens = 131072};
  Price p{.input = 1'000'000'000, .output = 2'000'000'000};
  TenantLimits l{.output_tokens_per_minute = 20000};
  Amounts a = ReservationFor(40, 0, "m", c, p, l);
  EXPECT_EQ(a.output_tokens, 20000);
  EXPECT_EQ(a.cost, 10 * 1000 + 131072 * 2000);  // the cost stays the worst case
  EXPECT_EQ(ReservationFor(40, 30000, "m", c, p, l).output_tokens, 30000);  // asked: too large
}

TEST(Estimate, SettlesWithUncachedInput) {
  Amounts a = SettledAmounts({.prompt = 1000, .cached = 700, .completion = 20}, 55);
  EXPECT_EQ(a.input_tokens, 300);
  EXPECT_EQ(a.output_tokens, 20);
  EXPECT_EQ(a.cost, 55);
}

}  // namespace
}  // namespace kinference::accounting
