#include "routing/outlier.h"

#include <algorithm>
#include <cmath>

namespace kinference::routing {

bool OutlierDetector::Record(const std::string& endpoint, RequestResult result, Seconds now) {
  if (result == RequestResult::kOther) return false;
  State& s = state_[endpoint];
  if (result == RequestResult::kSuccess) {
    if (!(s.ejected && now < s.ejected_until)) s.consecutive_ejections = 0;
    return false;
  }
  if (s.ejected && now < s.ejected_until) return false;  // a request sent before the ejection
  ++s.consecutive_ejections;
  ++s.total;
  double factor = std::pow(2.0, std::min(s.consecutive_ejections - 1, 30));
  s.ejected_until = now + std::min(config_.base_ejection_s * factor, config_.max_ejection_s);
  s.ejected = true;
  return true;
}

bool OutlierDetector::Ejected(const std::string& endpoint, Seconds now) const {
  auto it = state_.find(endpoint);
  return it != state_.end() && it->second.ejected && now < it->second.ejected_until;
}

std::optional<Seconds> OutlierDetector::EjectedUntil(const std::string& endpoint,
                                                     Seconds now) const {
  if (!Ejected(endpoint, now)) return std::nullopt;
  return state_.at(endpoint).ejected_until;
}

std::vector<std::string> OutlierDetector::Unejected(Seconds now) {
  std::vector<std::string> out;
  for (auto& [id, s] : state_) {
    if (s.ejected && now >= s.ejected_until) {
      s.ejected = false;
      out.push_back(id);
    }
  }
  return out;
}

uint64_t OutlierDetector::ejections_total(const std::string& endpoint) const {
  auto it = state_.find(endpoint);
  return it == state_.end() ? 0 : it->second.total;
}

}  // namespace kinference::routing
