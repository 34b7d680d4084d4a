// Taggers: label a request before routing so that policies can match on tags.
//
// Built-ins, pure and synchronous (no I/O; run on the request text in the gateway):
//  - pii: e-mail addresses, phone numbers, payment card numbers, US social security
//    numbers, IBANs, IP addresses, on the normalised text (encodings, Unicode forms and
//    invisible characters undone, policy/scan_normalize.h) and across neighbouring values
//    and a role's consecutive turns (policy/pii.h has the rules). Emits "pii" plus one sub-tag per
//    kind found: pii:email, pii:phone, pii:payment_card, pii:ssn, pii:iban, pii:ip.
//  - simple: the estimated prompt is at most `simple_max_prompt_tokens` and no tools are
//    present. Emits "simple".
//  - header: tags from a trusted upstream's `x-kinference-tags: a,b` header, used only when
//    the configuration marks the header trusted (otherwise a client could tag itself).
// Tags are a classifier's output, not proof: pattern matching misses PII written in other
// forms and flags look-alikes. Policies built on tags reduce risk; they do not guarantee.
//
// External classifiers (e.g. an HTTP model) implement ExternalClassifier; the gateway owns
// the I/O and the timeout and reports a failure as a failed tagger (RequestInfo::
// failed_taggers), which policies handle per onTaggerFailure.
//
// Thread-safety: free functions and Taggers::Run are pure and safe from any thread.
// ExternalClassifier implementations document their own.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "policy/pii.h"

namespace kinference::policy {

inline constexpr std::string_view kTagsHeader = "x-kinference-tags";

// Tags in a header value "a, b,c": trimmed, lower-cased, empty items dropped. Tags may use
// [a-z0-9:._-]; items with other characters are dropped.
std::vector<std::string> ParseTagHeader(std::string_view value);

// Estimated tokens of `text`: ceil(chars / 4), OpenAI's rule of thumb for English text
// ("one token is roughly 4 characters", OpenAI tokenizer help page).
int64_t EstimateTokens(std::string_view text);

struct TaggerConfig {
  bool pii = true;
  bool simple = true;
  // 256 tokens: a short single question; a deployment tunes it to its traffic.
  int64_t simple_max_prompt_tokens = 256;
  bool trust_tag_header = false;
};

struct TaggerInput {
  std::string_view text;  // the request's scan text (policy/request_text.h)
  // Spans of `text` whose neighbours the pii tagger also joins (PiiTags); empty: none.
  std::span<const TextSpan> values;
  // Groups of spans joined as neighbours too (each role's turns: RequestScan::role_values).
  std::span<const std::vector<TextSpan>> role_values;
  int64_t prompt_tokens = -1;  // -1: estimate from text
  bool tools_present = false;
  std::string_view tag_header;  // value of x-kinference-tags, empty if absent
};

// Runs the enabled built-ins; tags sorted, no duplicates.
std::vector<std::string> RunTaggers(const TaggerConfig& config, const TaggerInput& input);

// An external classifier. Classify must call `done` exactly once, with the tags or an
// error; the caller treats a result arriving after `timeout_s` (or an error) as a tagger
// failure. Implementations do their I/O asynchronously and must not block the caller.
class ExternalClassifier {
 public:
  virtual ~ExternalClassifier() = default;
  virtual std::string name() const = 0;
  virtual void Classify(std::string text, Seconds timeout_s,
                        std::function<void(Result<std::vector<std::string>>)> done) = 0;
};

}  // namespace kinference::policy
