#include "k8s/reflector.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kinference::k8s {

std::shared_ptr<Reflector> Reflector::Create(std::shared_ptr<RestClient> client,
                                             ReflectorOptions options, OnChanges on_changes) {
  return std::shared_ptr<Reflector>(
      new Reflector(std::move(client), std::move(options), std::move(on_changes)));
}

namespace {
uint64_t SeedOf(uint64_t seed) {
  if (seed != 0) return seed;
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}
}  // namespace

Reflector::Reflector(std::shared_ptr<RestClient> client, ReflectorOptions options,
                     OnChanges on_changes)
    : client_(std::move(client)),
      options_(std::move(options)),
      on_changes_(std::move(on_changes)),
      machine_(CollectionPath(options_.type, options_.ns), options_.list_watch,
               SeedOf(options_.seed)),
      name_(fmt::format("{} {}", options_.type.kind,
                        options_.ns.empty() ? std::string("(all namespaces)") : options_.ns)),
      timer_(client_->executor()) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  if (!stopped_) return;
  stopped_ = false;
  Execute(machine_.Start());
}

void Reflector::Stop() {
  if (stopped_) return;
  stopped_ = true;
  ++epoch_;
  timer_.cancel();
  if (watch_) watch_->Cancel();
  watch_.reset();
}

void Reflector::Deliver(std::vector<Change>& changes) {
  if (!changes.empty() && on_changes_) on_changes_(changes);
  changes.clear();
}

void Reflector::Execute(Step step) {
  if (stopped_) return;
  switch (step.kind) {
    case Step::Kind::kList:
      return DoList(step.target);
    case Step::Kind::kWatch:
      return DoWatch(step.target, step.timeout_s);
    case Step::Kind::kWait: {
      if (!logged_down_) {
        spdlog::warn("kubernetes: {}: {}; retrying with backoff (the last state stays in use)",
                     name_, machine_.last_error());
        logged_down_ = true;
      } else {
        spdlog::debug("kubernetes: {}: {}; retry in {:.1f} s", name_, machine_.last_error(),
                      step.delay_s);
      }
      timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(step.delay_s)));
      timer_.async_wait([self = shared_from_this(), epoch = epoch_](boost::system::error_code ec) {
        if (ec || epoch != self->epoch_) return;
        self->Execute(self->machine_.Resume());
      });
      return;
    }
  }
}

void Reflector::DoList(const std::string& target) {
  client_->Get(target, [self = shared_from_this(), epoch = epoch_](Result<ApiResponse> r) {
    if (epoch != self->epoch_) return;
    if (!r.ok()) {
      spdlog::debug("kubernetes: {}: list: {}", self->name_, r.status().message());
      return self->Execute(self->machine_.OnListFailed(0));
    }
    if (!r->ok()) {
      spdlog::debug("kubernetes: {}: list: {}", self->name_, ApiErrorMessage(*r));
      return self->Execute(self->machine_.OnListFailed(r->status));
    }
    std::vector<Change> changes;
    bool was_synced = self->machine_.synced();
    Step next = self->machine_.OnListPage(r->body, changes);
    if (self->machine_.synced() && next.kind == Step::Kind::kWatch) {
      if (self->logged_down_ || !was_synced) {
        spdlog::info("kubernetes: {}: listed {} object(s) at resourceVersion {}", self->name_,
                     self->machine_.cache().size(), self->machine_.resource_version());
      }
      self->logged_down_ = false;
    }
    self->Deliver(changes);
    self->Execute(std::move(next));
  });
}

void Reflector::DoWatch(const std::string& target, int64_t timeout_s) {
  auto start = std::chrono::steady_clock::now();
  struct WatchState {
    int status = 0;
    bool ended_by_us = false;
  };
  auto state = std::make_shared<WatchState>();
  RestClient::WatchCallbacks cb;
  cb.on_status = [state](int status) { state->status = status; };
  cb.on_line = [self = shared_from_this(), state, epoch = epoch_](std::string_view line) {
    if (epoch != self->epoch_ || state->ended_by_us) return;
    if (state->status != 200) return;  // an error body; judged by the status in on_done
    std::vector<Change> changes;
    bool keep = self->machine_.OnWatchLine(line, changes);
    if (self->logged_down_ && keep) {
      spdlog::info("kubernetes: {}: watching again", self->name_);
      self->logged_down_ = false;
    }
    self->Deliver(changes);
    if (!keep && epoch == self->epoch_) {
      state->ended_by_us = true;
      if (self->watch_) self->watch_->Cancel();
    }
  };
  cb.on_done = [self = shared_from_this(), state, start, epoch = epoch_](Status status) {
    if (epoch != self->epoch_) return;
    self->watch_.reset();
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    WatchEnd how = WatchEnd::kClosed;
    if (state->ended_by_us) {
      how = WatchEnd::kClosed;  // the machine knows why (ERROR event or bad line)
    } else if (state->status == 410) {
      how = WatchEnd::kGone;
    } else if (state->status != 0 && state->status != 200) {
      how = WatchEnd::kHttpError;
    } else if (!status.ok()) {
      how = WatchEnd::kTransportError;
    }
    self->Execute(self->machine_.OnWatchEnded(how, state->status, elapsed));
  };
  // The server ends the watch after timeout_s; silence much longer than that means a dead
  // connection (bookmarks and events keep a healthy one busy).
  double idle_s = static_cast<double>(timeout_s) + 30;
  watch_ = client_->Watch(target, idle_s, std::move(cb));
}

}  // namespace kinference::k8s
