// ListWatch: the pure state machine of a reflector (list, then watch from the list's
// resourceVersion), with client-go's reflector semantics (k8s.io/client-go/tools/cache/
// reflector.go) where they matter:
//
//   LIST    paginated: ?limit=page_size, then &continue=TOKEN until the token is empty.
//           Always a consistent read (no resourceVersion, i.e. served from etcd), so that
//           pagination works and a relist never goes back in time. The collection's
//           metadata.resourceVersion of the last page is where the watch starts. A failed
//           page (or an expired continue token, 410) restarts the list after a backoff.
//   WATCH   ?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=T, T random
//           in [min_watch_timeout_s, 2 * min_watch_timeout_s] (client-go: 5-10 min, which
//           spreads reconnects). ADDED/MODIFIED/DELETED update the cache and the RV;
//           BOOKMARK only the RV. A stream the server ends cleanly is re-watched at once
//           from the last RV, unless it ended within kShortWatchS without an event
//           (client-go's "very short watch"): that counts as a transport error.
//   410     An ERROR event whose Status has code 410 (Gone: the RV was compacted away) or a
//           410 response to the watch: relist at once (the watch cannot resume).
//   errors  A watch that fails in transport (reset, refused, timeout) is re-watched from
//           the last RV after a backoff; any other error status ends the watch and
//           relists after a backoff; a malformed event line likewise.
//   backoff Exponential with jitter, client-go's reflector parameters: 0.8 s initial, x2
//           per consecutive failure, capped at 30 s, plus up to 100% random jitter
//           (wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)); reset by a
//           successful list or watch event.
//
// The machine never performs I/O: the shell (reflector.h) executes each Step it returns
// and reports the outcome. Time enters only as the Wait delay; randomness from a seeded
// generator, so tests are deterministic.
//
// Thread-safety: not thread-safe; one owner.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/cache.h"

namespace kinference::k8s {

// A watch ended cleanly sooner than this without any event is a failure (client-go's
// reflector treats a watch under 1 s with no items as "very short watch").
inline constexpr double kShortWatchS = 1;

struct BackoffOptions {
  double initial_s = 0.8;
  double max_s = 30;
  double factor = 2;
  double jitter = 1;  // a delay d becomes d * (1 + jitter * U[0,1))
};

class Backoff {
 public:
  Backoff(BackoffOptions options, uint64_t seed) : options_(options), rng_(seed) {}
  // The next delay in seconds; each call grows the base delay.
  double Next();
  void Reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  BackoffOptions options_;
  std::mt19937_64 rng_;
  int failures_ = 0;
};

struct ListWatchOptions {
  int64_t page_size = 500;           // client-go's pager.PageSize
  double min_watch_timeout_s = 300;  // client-go's minWatchTimeout (5 min)
  BackoffOptions backoff;
  std::string label_selector;  // e.g. "app=vllm"; empty: all
  std::string field_selector;
};

struct Step {
  enum class Kind { kList, kWatch, kWait };
  Kind kind = Kind::kList;
  std::string target;     // kList/kWatch: the request path with its query
  double delay_s = 0;     // kWait: then call Resume()
  int64_t timeout_s = 0;  // kWatch: the timeoutSeconds sent
};

// What the shell tells the machine about a finished watch.
enum class WatchEnd { kClosed, kTransportError, kHttpError, kGone };

class ListWatch {
 public:
  // `collection` is CollectionPath(type, namespace).
  ListWatch(std::string collection, ListWatchOptions options, uint64_t seed);

  // The first step (a LIST).
  Step Start();
  // A list page arrived: its body (a *List object). Appends changes when the list is
  // complete (then synced() is true). Returns the next page's LIST, or the WATCH.
  Step OnListPage(std::string_view body, std::vector<Change>& changes);
  // A list page failed (transport error, or a non-2xx `http_status`): Wait, then relist.
  Step OnListFailed(int http_status);
  // One line of the watch stream. Returns true to keep reading; false when the line ends
  // the watch (an ERROR event or a malformed line): cancel the call and ask OnWatchEnded.
  bool OnWatchLine(std::string_view line, std::vector<Change>& changes);
  // The watch call ended (or was cancelled after OnWatchLine returned false) after
  // `elapsed_s` seconds.
  Step OnWatchEnded(WatchEnd how, int http_status = 0, double elapsed_s = 1e9);
  // After a Wait: the step it was waiting for.
  Step Resume();

  const ObjectCache& cache() const { return cache_; }
  const std::string& resource_version() const { return resource_version_; }
  // True once a LIST completed.
  bool synced() const { return synced_; }
  // Counters for logs and tests.
  int relists() const { return relists_; }
  const std::string& last_error() const { return last_error_; }

 private:
  Step List(const std::string& continue_token);
  Step Watch();
  Step WaitThen(Step::Kind next);

  std::string collection_;
  ListWatchOptions options_;
  Backoff backoff_;
  std::mt19937_64 rng_;
  ObjectCache cache_;
  std::vector<ObjectPtr> pending_;  // pages of the list in progress
  std::string resource_version_;
  Step::Kind after_wait_ = Step::Kind::kList;
  bool synced_ = false;
  bool watch_gone_ = false;    // the current watch reported 410
  bool watch_failed_ = false;  // an ERROR event / bad line ended it (not 410)
  int watch_events_ = 0;       // events (bookmarks included) of the current watch
  int relists_ = 0;
  std::string last_error_;
};

}  // namespace kinference::k8s
