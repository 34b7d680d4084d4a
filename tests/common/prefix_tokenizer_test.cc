#include "common/prefix_tokenizer.h"

#include <gtest/gtest.h>

#include <random>

namespace kinference {
namespace {

// Text from pieces that exercise every tokenizer rule near a cut: words longer than 8
// bytes, whitespace runs ending in a space, special tokens and a lone '<'.
std::string RandomText(std::mt19937_64& rng, size_t min_bytes) {
  static const std::vector<std::string> kPieces = {
      " ab",          " abcdefghijk",  "x",           "  ",  "\n\n ", "\t", "<", "<|im_end|>",
      "<|im_start|>", "<|endoftext|>", " <|im_end|>", "  \n"};
  std::string out;
  while (out.size() < min_bytes) out += kPieces[rng() % kPieces.size()];
  return out;
}

TEST(PrefixTokenizerTest, EqualsTokenizeForTextsSharingPrefixesCutAnywhere) {
  std::mt19937_64 rng(11);
  PrefixTokenizer cached;
  const std::string base = RandomText(rng, 3000);
  for (size_t cut = 1500; cut < 1700; ++cut) {  // every cut in a window of 200 bytes
    const std::string text = base.substr(0, cut) + RandomText(rng, 100);
    ASSERT_EQ(cached.Tokenize(text), Tokenize(text)) << "cut at " << cut;
  }
  EXPECT_GT(cached.reused_tokens(), 0u);
}

TEST(PrefixTokenizerTest, ReusesTheSharedPrefixOfSyntheticPrompts) {
  PrefixTokenizer cached;
  const std::string prefix = "<|im_start|>user\n" + SyntheticText(1, 2000);
  const std::string a = prefix + SyntheticText(2, 50) + "<|im_end|>\n";
  const std::string b = prefix + SyntheticText(3, 50) + "<|im_end|>\n";
  EXPECT_EQ(cached.Tokenize(a), Tokenize(a));
  EXPECT_EQ(cached.reused_tokens(), 0u);
  EXPECT_EQ(cached.Tokenize(b), Tokenize(b));
  // All of the prefix's tokens but those within the lookahead of the first difference.
  EXPECT_GE(cached.reused_tokens(), 2000u - 4);
  EXPECT_LE(cached.reused_tokens(), 2004u);
}

TEST(PrefixTokenizerTest, ShortAndUnrelatedTextsAreTokenizedInFull) {
  PrefixTokenizer cached;
  EXPECT_EQ(cached.Tokenize("hello world"), Tokenize("hello world"));
  EXPECT_EQ(cached.entries(), 0u);  // under kMinCachedBytes: not kept
  const std::string a = SyntheticText(5, 1000), b = SyntheticText(6, 1000);
  EXPECT_EQ(cached.Tokenize(a), Tokenize(a));
  EXPECT_EQ(cached.Tokenize(b), Tokenize(b));
  EXPECT_EQ(cached.reused_tokens(), 0u);
  EXPECT_EQ(cached.entries(), 2u);
}

TEST(PrefixTokenizerTest, KeepsAtMostMaxEntriesTexts) {
  PrefixTokenizer cached(/*max_entries=*/3);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const std::string t = SyntheticText(seed, 400);
    ASSERT_EQ(cached.Tokenize(t), Tokenize(t));
    EXPECT_LE(cached.entries(), 3u);
  }
}

TEST(PrefixTokenizerTest, RepeatedTextIsReusedUpToItsLastBytes) {
  PrefixTokenizer cached;
  const std::string t = SyntheticText(9, 1000);
  EXPECT_EQ(cached.Tokenize(t), Tokenize(t));
  EXPECT_EQ(cached.Tokenize(t), Tokenize(t));
  EXPECT_GE(cached.reused_tokens(), 990u);
}

}  // namespace
}  // namespace kinference
