// CharsPerToken: the learned ratio of rendered-text characters to prompt tokens, used to
// turn the prefix index's character matches (and prompt lengths) into tokens.
//
// Estimate = (prior_chars + sum chars) / (prior_tokens + sum tokens) over finished
// requests (prompt_chars vs usage.prompt_tokens), with sums decayed by `decay` per
// observation so the ratio follows a change of tokenizer or traffic. Prior: 4 characters
// per token, OpenAI's rule of thumb for English text with BPE tokenizers
// (help.openai.com, "What are tokens and how to count them?"), worth 2000 tokens.
//
// Thread-safety: not thread-safe; owned by the Router.
#pragma once

#include <cstddef>

namespace kinference::routing {

class CharsPerToken {
 public:
  static constexpr double kPriorRatio = 4.0;    // characters per token
  static constexpr double kPriorTokens = 2000;  // prior weight, in tokens
  static constexpr double kDecay = 0.999;       // per observation

  // One finished request: its rendered text had `chars` characters and `tokens` tokens.
  // Ignored when either is zero.
  void Observe(size_t chars, int tokens);
  double Ratio() const { return chars_ / tokens_; }
  double ToTokens(double chars) const { return chars / Ratio(); }
  double ToChars(double tokens) const { return tokens * Ratio(); }

 private:
  double chars_ = kPriorRatio * kPriorTokens;
  double tokens_ = kPriorTokens;
};

}  // namespace kinference::routing
