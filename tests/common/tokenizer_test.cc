#include "common/tokenizer.h"

#include <gtest/gtest.h>

namespace kinference {
namespace {

std::vector<std::string> Pieces(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (uint32_t n : TokenLengths(text)) {
    out.emplace_back(text.substr(pos, n));
    pos += n;
  }
  return out;
}

TEST(TokenizerTest, SpaceJoinsFollowingWord) {
  EXPECT_EQ(Pieces("hello world"), (std::vector<std::string>{"hello", " world"}));
}

TEST(TokenizerTest, LongWordsSplitEveryEightBytes) {
  EXPECT_EQ(Pieces(" abcdefghijkl"), (std::vector<std::string>{" abcdefgh", "ijkl"}));
}

TEST(TokenizerTest, WhitespaceRunLeavesLastSpaceToWord) {
  EXPECT_EQ(Pieces("a\n b"), (std::vector<std::string>{"a", "\n", " b"}));
  EXPECT_EQ(Pieces("a   b"), (std::vector<std::string>{"a", "  ", " b"}));
  EXPECT_EQ(Pieces("a\n\n"), (std::vector<std::string>{"a", "\n\n"}));
}

TEST(TokenizerTest, SpecialTokensAreAtomic) {
  EXPECT_EQ(Pieces("<|im_start|>user\nhi<|im_end|>\n"),
            (std::vector<std::string>{"<|im_start|>", "user", "\n", "hi", "<|im_end|>", "\n"}));
}

TEST(TokenizerTest, PrefixStableAcrossTokenBoundaries) {
  std::string a = "<|im_start|>assistant\n";
  std::string b = SyntheticText(7, 50) + "<|im_end|>\n<|im_start|>user\n" + SyntheticText(8, 20);
  auto whole = Tokenize(a + b);
  auto ta = Tokenize(a);
  auto tb = Tokenize(b);
  ta.insert(ta.end(), tb.begin(), tb.end());
  EXPECT_EQ(whole, ta);
}

TEST(TokenizerTest, SyntheticTextHasExactTokenCount) {
  for (size_t n : {0u, 1u, 17u, 16000u}) {
    std::string t = SyntheticText(42, n);
    EXPECT_EQ(CountTokens(t), n);
    EXPECT_EQ(Tokenize(t).size(), n);
  }
  EXPECT_EQ(SyntheticText(1, 100), SyntheticText(1, 100));
  EXPECT_NE(SyntheticText(1, 100), SyntheticText(2, 100));
}

TEST(TokenizerTest, EqualPiecesGiveEqualIds) {
  auto ids = Tokenize("x x x");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], ids[2]);
  EXPECT_NE(ids[0], ids[1]);  // "x" vs " x"
}

}  // namespace
}  // namespace kinference
