#include "engine/chat_template.h"

#include <gtest/gtest.h>

#include "common/tokenizer.h"

namespace kinference::engine {
namespace {

TEST(ChatTemplate, RendersChatMl) {
  ChatMessages m = {{"system", "Be brief."}, {"user", "Hi"}};
  EXPECT_EQ(ApplyChatTemplate(m, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(ApplyChatTemplate(m, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(ApplyChatTemplate({}, true), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, NextTurnSharesTokenPrefix) {
  ChatMessages m = {{"user", SyntheticText(1, 50)}};
  auto first = Tokenize(ApplyChatTemplate(m, false));
  m.push_back({"assistant", SyntheticText(2, 20)});
  m.push_back({"user", SyntheticText(3, 10)});
  auto second = Tokenize(ApplyChatTemplate(m, true));
  ASSERT_GT(second.size(), first.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), second.begin()));
}

}  // namespace
}  // namespace kinference::engine
