#include "accounting/prices.h"

#include <gtest/gtest.h>

namespace kinference::accounting {
namespace {

// USD per million tokens -> nano-USD per million tokens.
NanoUsd PerM(double usd) { return static_cast<NanoUsd>(usd * 1e9 + 0.5); }

TEST(Cost, BillsCachedTokensOnceAtTheCachedPrice) {
  Price p{
      .input = PerM(3), .cached_input = PerM(0.30), .cache_write = PerM(3.75), .output = PerM(15)};
  // 10,000 prompt tokens of which 8,000 were read from cache; 500 completion tokens.
  TokenCounts t{.prompt = 10'000, .cached = 8'000, .cache_creation = 0, .completion = 500};
  // 2,000 * 3 + 8,000 * 0.30 + 500 * 15 = 6,000 + 2,400 + 7,500 = 15,900 USD/M -> 0.0159 USD.
  EXPECT_EQ(Cost(p, t), 15'900'000);
  // Billing the cached tokens as full input too would give 0.0399 USD; at full price
  // only, 0.0375 USD.
  EXPECT_NE(Cost(p, t), 39'900'000);
}

TEST(Cost, BillsCacheWritesAtTheCacheWritePrice) {
  Price p{
      .input = PerM(3), .cached_input = PerM(0.30), .cache_write = PerM(3.75), .output = PerM(15)};
  // Anthropic usage input_tokens 100, cache_creation 1,000, cache_read 4,000, output 10 is
  // prompt 5,100 in the gateway's shape.
  TokenCounts t{.prompt = 5'100, .cached = 4'000, .cache_creation = 1'000, .completion = 10};
  EXPECT_EQ(t.uncached_input(), 100);
  // 100*3 + 4,000*0.3 + 1,000*3.75 + 10*15 = 300 + 1,200 + 3,750 + 150 = 5,400 USD/M.
  EXPECT_EQ(Cost(p, t), 5'400'000);
}

TEST(Cost, RoundsOncePerRequestToTheNearestNanoUsd) {
  Price p{.input = PerM(0.0375), .cached_input = 0, .cache_write = 0, .output = 0};
  // 1 token at 0.0375 USD/M = 3.75e-8 USD = 37.5 nano-USD -> 38.
  EXPECT_EQ(Cost(p, {.prompt = 1}), 38);
  EXPECT_EQ(Cost(p, {.prompt = 2}), 75);
}

TEST(Cost, ClampsInconsistentCountsInsteadOfBillingNegativeInput) {
  Price p{.input = PerM(1), .cached_input = PerM(0.5), .cache_write = PerM(1), .output = 0};
  TokenCounts t{.prompt = 10, .cached = 20, .cache_creation = 0, .completion = 0};
  EXPECT_EQ(t.uncached_input(), 0);
  EXPECT_EQ(Cost(p, t), 10'000);  // 20 * 0.5 USD/M = 1e-5 USD
}

TEST(PriceTable, PicksTheMostSpecificEntry) {
  PriceTable table({
      {.provider = "*", .model = "*", .price = {.input = 1}},
      {.provider = "pool-a", .model = "*", .price = {.input = 2}},
      {.provider = "*", .model = "llama", .price = {.input = 3}},
      {.provider = "pool-a", .model = "llama", .price = {.input = 4}},
  });
  EXPECT_EQ(table.Lookup("pool-a", "llama")->input, 4);
  EXPECT_EQ(table.Lookup("pool-b", "llama")->input, 3);
  EXPECT_EQ(table.Lookup("pool-a", "qwen")->input, 2);
  EXPECT_EQ(table.Lookup("pool-b", "qwen")->input, 1);
}

TEST(PriceTable, HasNoPriceWithoutAMatchingEntry) {
  PriceTable table({{.provider = "openai", .model = "gpt-4o", .price = {.input = 1}}});
  EXPECT_FALSE(table.Lookup("openai", "gpt-4o-mini").has_value());
  EXPECT_FALSE(table.Lookup("pool", "gpt-4o").has_value());
  EXPECT_FALSE(PriceTable().Lookup("a", "b").has_value());
}

}  // namespace
}  // namespace kinference::accounting
