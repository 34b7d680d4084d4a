// PolicyStore: the current PolicySet, swapped atomically on hot reload.
//
// An optional Validator (the gateway's reference check, policy/references.h) runs on every
// freshly loaded set; its error rejects the set exactly like a load error.
//
// Readers take a shared_ptr snapshot (Current()) and evaluate against it for the whole
// request, so a reload never changes a decision half-way. Reload() reads and validates the
// files; an invalid new set is rejected with its errors and the last valid set stays.
// ReloadIfChanged() reloads only when a file's modification time or size changed (for
// polling from a timer; SIGHUP handlers should call Reload()). Generations start at 1 and
// increase by one per successful load.
//
// Reload*/Set take a file-system snapshot (I/O): call them from a control thread or timer,
// never on the request path. Current() is cheap (one mutex-protected shared_ptr copy).
//
// Thread-safety: every method is safe from any thread.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "policy/policy.h"

namespace kinference::policy {

class PolicyStore {
 public:
  // Starts with an empty set (generation 0: no policies, no constraints).
  using Validator = std::function<Status(const PolicySet&)>;

  PolicyStore();
  explicit PolicyStore(std::vector<std::string> paths, Validator validate = {});

  std::shared_ptr<const PolicySet> Current() const;
  // Loads the configured files. On error the current set is kept and the error returned.
  Status Reload();
  // Reloads when any file's mtime or size differs from the last successful or failed
  // attempt. Returns Ok (and does nothing) when unchanged.
  Status ReloadIfChanged();
  const std::vector<std::string>& paths() const { return paths_; }
  // Replaces the set with `policies` (already in evaluation order, policy::SortPolicies) as
  // the next generation, which it returns. No Validator runs: the caller (Kubernetes mode,
  // whose policies come from InferencePolicy objects read by the same loader) has checked
  // them, and references to pools that do not exist yet are allowed there.
  uint64_t Set(std::vector<Policy> policies);

 private:
  struct FileStamp {
    std::filesystem::file_time_type mtime{};
    uintmax_t size = 0;
    bool operator==(const FileStamp&) const = default;
  };
  std::vector<FileStamp> Stamps() const;

  const std::vector<std::string> paths_;
  const Validator validate_;
  mutable std::mutex mu_;
  std::shared_ptr<const PolicySet> current_;
  std::vector<FileStamp> last_stamps_;
  std::mutex reload_mu_;  // serialises reloads
};

}  // namespace kinference::policy
