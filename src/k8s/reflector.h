// Reflector: keeps a local cache of one Kubernetes collection up to date by list and watch
// (the I/O shell around ListWatch, list_watch.h, which holds the semantics: pagination,
// bookmarks, relist on 410 Gone, jittered backoff) and hands every change to a callback,
// as a client-go informer hands them to its event handlers.
//
// The cache survives failures: while the API server is unreachable the last state stays
// (consumers keep serving from it) and the reflector keeps retrying with backoff; a relist
// reconciles it (objects deleted meanwhile are reported as deletions).
//
// Thread-safety: not thread-safe; create, Start, Stop and read the cache on the
// RestClient's io_context thread, where the callbacks run too. Stop() before destroying
// the RestClient.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "k8s/list_watch.h"
#include "k8s/resource.h"
#include "k8s/rest_client.h"

namespace kinference::k8s {

struct ReflectorOptions {
  ResourceType type;
  std::string ns;  // "" = all namespaces
  ListWatchOptions list_watch;
  uint64_t seed = 0;  // 0: from the clock
};

class Reflector : public std::enable_shared_from_this<Reflector> {
 public:
  // Called with the changes of one list or one watch event (never empty).
  using OnChanges = std::function<void(const std::vector<Change>&)>;

  static std::shared_ptr<Reflector> Create(std::shared_ptr<RestClient> client,
                                           ReflectorOptions options, OnChanges on_changes);
  ~Reflector();

  void Start();
  void Stop();

  const ObjectCache& cache() const { return machine_.cache(); }
  bool synced() const { return machine_.synced(); }
  const std::string& resource_version() const { return machine_.resource_version(); }
  int relists() const { return machine_.relists(); }
  // "InferencePool default" etc., for logs.
  const std::string& name() const { return name_; }

 private:
  Reflector(std::shared_ptr<RestClient> client, ReflectorOptions options, OnChanges on_changes);
  void Execute(Step step);
  void DoList(const std::string& target);
  void DoWatch(const std::string& target, int64_t timeout_s);
  void Deliver(std::vector<Change>& changes);

  std::shared_ptr<RestClient> client_;
  ReflectorOptions options_;
  OnChanges on_changes_;
  ListWatch machine_;
  std::string name_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<http::Call> watch_;
  uint64_t epoch_ = 0;  // bumped by Stop: completions of older calls are ignored
  bool stopped_ = true;
  bool logged_down_ = false;  // one "unreachable" warning until it recovers
};

}  // namespace kinference::k8s
