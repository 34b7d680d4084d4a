#include "k8s/list_watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cmath>

namespace kinference::k8s {
namespace json = boost::json;

double Backoff::Next() {
  double base = options_.initial_s * std::pow(options_.factor, failures_);
  base = std::min(base, options_.max_s);
  if (base < options_.max_s) ++failures_;
  std::uniform_real_distribution<double> u(0, 1);
  return base * (1 + options_.jitter * u(rng_));
}

ListWatch::ListWatch(std::string collection, ListWatchOptions options, uint64_t seed)
    : collection_(std::move(collection)),
      options_(std::move(options)),
      backoff_(options_.backoff, seed),
      rng_(seed ^ 0x9e3779b97f4a7c15ull) {}

Step ListWatch::List(const std::string& continue_token) {
  if (continue_token.empty()) pending_.clear();
  std::string target = fmt::format("{}?limit={}", collection_, options_.page_size);
  if (!options_.label_selector.empty())
    target += "&labelSelector=" + QueryEscape(options_.label_selector);
  if (!options_.field_selector.empty())
    target += "&fieldSelector=" + QueryEscape(options_.field_selector);
  if (!continue_token.empty()) target += "&continue=" + QueryEscape(continue_token);
  return Step{Step::Kind::kList, std::move(target), 0, 0};
}

Step ListWatch::Watch() {
  watch_gone_ = false;
  watch_failed_ = false;
  watch_events_ = 0;
  std::uniform_real_distribution<double> u(0, 1);
  auto timeout = static_cast<int64_t>(options_.min_watch_timeout_s * (1 + u(rng_)));
  timeout = std::max<int64_t>(timeout, 1);
  std::string target =
      fmt::format("{}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
                  collection_, QueryEscape(resource_version_), timeout);
  if (!options_.label_selector.empty())
    target += "&labelSelector=" + QueryEscape(options_.label_selector);
  if (!options_.field_selector.empty())
    target += "&fieldSelector=" + QueryEscape(options_.field_selector);
  return Step{Step::Kind::kWatch, std::move(target), 0, timeout};
}

Step ListWatch::WaitThen(Step::Kind next) {
  after_wait_ = next;
  return Step{Step::Kind::kWait, "", backoff_.Next(), 0};
}

Step ListWatch::Start() { return List(""); }

Step ListWatch::Resume() {
  if (after_wait_ == Step::Kind::kWatch) return Watch();
  ++relists_;
  return List("");
}

Step ListWatch::OnListPage(std::string_view body, std::vector<Change>& changes) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  const json::array* items = nullptr;
  if (!ec && v.is_object()) {
    const auto* it = v.as_object().if_contains("items");
    if (it != nullptr && it->is_array()) items = &it->as_array();
    // "items": null is an empty list.
    static const json::array kEmpty;
    if (it != nullptr && it->is_null()) items = &kEmpty;
  }
  if (items == nullptr) {
    last_error_ = "list: the response is not a list object";
    return WaitThen(Step::Kind::kList);
  }
  for (const auto& item : *items) {
    if (item.is_object())
      pending_.push_back(std::make_shared<const json::object>(item.as_object()));
  }
  const json::object& list = v.as_object();
  std::string cont(StringAt(list, {"metadata", "continue"}));
  if (!cont.empty()) return List(cont);
  resource_version_ = std::string(StringAt(list, {"metadata", "resourceVersion"}));
  auto replaced = cache_.Replace(std::move(pending_));
  pending_.clear();
  changes.insert(changes.end(), std::make_move_iterator(replaced.begin()),
                 std::make_move_iterator(replaced.end()));
  synced_ = true;
  backoff_.Reset();
  last_error_.clear();
  return Watch();
}

Step ListWatch::OnListFailed(int http_status) {
  if (http_status == 0) {
    last_error_ = "list: transport error";
  } else if (http_status == 404) {
    last_error_ = "list: HTTP 404 (is the resource's CustomResourceDefinition installed?)";
  } else if (http_status == 401 || http_status == 403) {
    last_error_ = fmt::format("list: HTTP {} (check the credentials and RBAC)", http_status);
  } else {
    last_error_ = fmt::format("list: HTTP {}", http_status);
  }
  return WaitThen(Step::Kind::kList);
}

bool ListWatch::OnWatchLine(std::string_view line, std::vector<Change>& changes) {
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) {
    watch_failed_ = true;
    last_error_ = "watch: malformed event";
    return false;
  }
  const json::object& event = v.as_object();
  std::string_view type = StringAt(event, {"type"});
  const json::value* obj = event.if_contains("object");
  if (obj == nullptr || !obj->is_object()) {
    watch_failed_ = true;
    last_error_ = "watch: event without an object";
    return false;
  }
  const json::object& o = obj->as_object();
  if (type == "ERROR") {
    // A metav1.Status; 410 Gone means the resourceVersion is too old (compacted).
    const json::value* code = o.if_contains("code");
    int64_t status = code != nullptr && code->is_number() ? code->to_number<int64_t>() : 0;
    bool gone = status == 410;
    last_error_ = fmt::format("watch: ERROR {} {}: {}", status, StringAt(o, {"reason"}),
                              StringAt(o, {"message"}));
    if (gone) {
      watch_gone_ = true;
    } else {
      watch_failed_ = true;
    }
    return false;
  }
  std::string rv(ResourceVersionOf(o));
  ++watch_events_;
  if (type == "BOOKMARK") {
    if (!rv.empty()) resource_version_ = rv;
    return true;
  }
  auto ptr = std::make_shared<const json::object>(o);
  std::optional<Change> change;
  if (type == "ADDED" || type == "MODIFIED") {
    change = cache_.Upsert(ptr);
  } else if (type == "DELETED") {
    change = cache_.Remove(KeyOf(o), ptr);
  } else {
    watch_failed_ = true;
    last_error_ = fmt::format("watch: unknown event type '{}'", type);
    return false;
  }
  if (!rv.empty()) resource_version_ = rv;
  if (change) changes.push_back(std::move(*change));
  backoff_.Reset();
  return true;
}

Step ListWatch::OnWatchEnded(WatchEnd how, int http_status, double elapsed_s) {
  if (how == WatchEnd::kGone || watch_gone_ || http_status == 410) {
    // The RV is gone: relist at once (the events in between are lost to a watch).
    ++relists_;
    return List("");
  }
  if (watch_failed_ || how == WatchEnd::kHttpError) {
    if (how == WatchEnd::kHttpError) last_error_ = fmt::format("watch: HTTP {}", http_status);
    return WaitThen(Step::Kind::kList);
  }
  if (how == WatchEnd::kTransportError) {
    last_error_ = "watch: transport error";
    return WaitThen(Step::Kind::kWatch);
  }
  if (watch_events_ == 0 && elapsed_s < kShortWatchS) {
    last_error_ = "watch: very short watch (ended at once without events)";
    return WaitThen(Step::Kind::kWatch);
  }
  return Watch();  // the server's timeoutSeconds ended it cleanly
}

}  // namespace kinference::k8s
