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

  // The ratio used to size the prefix index from the engine's KV capacity in tokens
  // (Router: num_gpu_blocks x block_size x ratio characters) until a finished request
  // has shown the real one: twice the prior. The two ways of being wrong are not alike:
  // an index sized too large believes in blocks the engine evicted, and the first
  // finished request there trims that chain (Router::OnFinished's correction); an index
  // sized too small forgets prefixes the engine still holds, nothing tells it so, and
  // their next requests look cold everywhere and are prefilled again on another
  // replica. Before the first finish nothing else bounds the error, and under overload
  // that is the first minute or more: with engine-sim's tokenizer (5.5 characters per
  // token) the prior's index held 6.6 of the 8-9 16k-token prefixes an L40S replica
  // caches, and predicted-ttft replicated 21 of 24 prefixes it had forgotten
  // (docs/routing.md, "The index's capacity before the ratio is known"). 8 covers the
  // BPE tokenizers' usual 3-6 characters per token on text and code.
  static constexpr double kCapacityPriorRatio = 2 * kPriorRatio;

  // One finished request: its rendered text had `chars` characters and `tokens` tokens.
  // Ignored when either is zero.
  void Observe(size_t chars, int tokens);
  double Ratio() const { return chars_ / tokens_; }
  double ToTokens(double chars) const { return chars / Ratio(); }
  double ToChars(double tokens) const { return tokens * Ratio(); }
  // Whether any request has been observed.
  bool Observed() const { return observed_; }
  // Characters held by a KV cache of `tokens` tokens: at the learned ratio once observed,
  // at kCapacityPriorRatio before.
  double CapacityChars(double tokens) const {
    return tokens * (observed_ ? Ratio() : kCapacityPriorRatio);
  }

 private:
  double chars_ = kPriorRatio * kPriorTokens;
  double tokens_ = kPriorTokens;
  bool observed_ = false;
};

}  // namespace kinference::routing
