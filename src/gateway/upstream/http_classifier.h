// HttpClassifier: an external request classifier reached over HTTP, the gateway's
// implementation of policy::ExternalClassifier (docs/policy.md, "Classifier hook").
//
// Contract: POST <url> (http or https) with `{"text": "<scan text>"}`, the request's
// every string value (policy/request_text.h) (Content-Type
// application/json); the classifier answers 200 with `{"tags": ["pii", "legal", ...]}`.
// Tags follow the x-kinference-tags rules (lower-cased; items with characters outside
// [a-z0-9:._-] dropped). Anything else (connect error, non-200, malformed JSON, no
// `tags` array) or no answer within the timeout is a failure, reported through `done`
// as an error; the gateway then lists the classifier in RequestInfo::failed_taggers.
// A timeout cancels the call (closes the connection).
//
// Thread-safety: lives on the gateway's io_context; call Classify from its thread.
// `done` runs on that thread, exactly once.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "gateway/config/policy_config.h"
#include "policy/taggers.h"

namespace kinference::gateway {

class HttpClassifier final : public policy::ExternalClassifier {
 public:
  HttpClassifier(boost::asio::any_io_executor executor, ClassifierConfig config);
  std::string name() const override { return config_.name; }
  // `timeout_s`: real seconds for the whole call.
  void Classify(std::string text, Seconds timeout_s,
                std::function<void(Result<std::vector<std::string>>)> done) override;

 private:
  boost::asio::any_io_executor executor_;
  ClassifierConfig config_;
};

// Tags from a classifier's response body (exposed for tests). kUnavailable when malformed.
Result<std::vector<std::string>> ParseClassifierResponse(std::string_view body);

}  // namespace kinference::gateway
