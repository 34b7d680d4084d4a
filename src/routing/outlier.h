// Passive health in the style of Envoy's outlier detection: an endpoint whose requests fail
// in ways that say the endpoint itself is broken (the connection could not be made, it was
// reset before the response ended, or the answer was a 5xx) is ejected at once, for a
// time that doubles with each ejection in a row (base_ejection_s, 2x, 4x, ... capped at
// max_ejection_s); a success resets the count. When the time is up the endpoint is
// eligible again; its next request decides (another failure ejects it for twice as long).
// Independent of /metrics scraping: a killed replica is out at its first failed request,
// and a replica whose /metrics fails but which serves requests stays in.
//
// Differences from Envoy (envoy.config.cluster.v3.OutlierDetection): Envoy ejects after
// consecutive_5xx (default 5) failures for base_ejection_time (30 s) x the ejection count;
// with a handful of vLLM replicas every failed request is a user-visible retry, so one
// failure ejects and the first ejection is short (1 s, our choice), growing geometrically.
// There is no max_ejection_percent: when every endpoint of a model is ejected the gateway
// answers 503 with Retry-After until the first ejection ends.
//
// Thread-safety: not thread-safe; pure (time passed in).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace kinference::routing {

struct OutlierConfig {
  Seconds base_ejection_s = 1;
  Seconds max_ejection_s = 60;
};

enum class RequestResult {
  kSuccess,
  kConnectFailure,  // no connection (refused, unreachable, connect timeout)
  kReset,           // connection lost before the response ended
  kServerError,     // HTTP 5xx
  kOther,           // neither (4xx, client cancel, timeouts of our own): no effect
};

class OutlierDetector {
 public:
  explicit OutlierDetector(OutlierConfig config = {}) : config_(config) {}

  // Records a request's result; returns true when it ejected the endpoint.
  bool Record(const std::string& endpoint, RequestResult result, Seconds now);
  bool Ejected(const std::string& endpoint, Seconds now) const;
  // When the current ejection ends (none: not ejected).
  std::optional<Seconds> EjectedUntil(const std::string& endpoint, Seconds now) const;
  // Endpoints whose ejection ended by `now` since the last call (to mark healthy again).
  std::vector<std::string> Unejected(Seconds now);
  uint64_t ejections_total(const std::string& endpoint) const;
  void Remove(const std::string& endpoint) { state_.erase(endpoint); }
  const OutlierConfig& config() const { return config_; }

 private:
  struct State {
    int consecutive_ejections = 0;
    Seconds ejected_until = -1;
    bool ejected = false;  // not yet reported by Unejected
    uint64_t total = 0;
  };
  OutlierConfig config_;
  std::map<std::string, State> state_;
};

}  // namespace kinference::routing
