#include "policy/store.h"

namespace kinference::policy {

PolicyStore::PolicyStore() : current_(std::make_shared<const PolicySet>()) {}

PolicyStore::PolicyStore(std::vector<std::string> paths, Validator validate)
    : paths_(std::move(paths)),
      validate_(std::move(validate)),
      current_(std::make_shared<const PolicySet>()) {}

std::shared_ptr<const PolicySet> PolicyStore::Current() const {
  std::lock_guard lock(mu_);
  return current_;
}

std::vector<PolicyStore::FileStamp> PolicyStore::Stamps() const {
  std::vector<FileStamp> out;
  for (const auto& p : paths_) {
    std::error_code ec;
    FileStamp s;
    s.mtime = std::filesystem::last_write_time(p, ec);
    if (ec) s.mtime = {};
    s.size = std::filesystem::file_size(p, ec);
    if (ec) s.size = 0;
    out.push_back(s);
  }
  return out;
}

Status PolicyStore::Reload() {
  std::lock_guard reload_lock(reload_mu_);
  auto stamps = Stamps();
  uint64_t next = Current()->generation + 1;
  auto loaded = LoadPolicySet(paths_, next);
  last_stamps_ = std::move(stamps);
  if (!loaded.ok()) return loaded.status();
  if (validate_) {
    if (Status s = validate_(*loaded); !s.ok()) return s;
  }
  auto fresh = std::make_shared<const PolicySet>(std::move(loaded).value());
  std::lock_guard lock(mu_);
  current_ = std::move(fresh);
  return Status::Ok();
}

uint64_t PolicyStore::Set(std::vector<Policy> policies) {
  std::lock_guard reload_lock(reload_mu_);
  auto fresh = std::make_shared<PolicySet>();
  fresh->policies = std::move(policies);
  std::lock_guard lock(mu_);
  fresh->generation = current_->generation + 1;
  current_ = std::move(fresh);
  return current_->generation;
}

Status PolicyStore::ReloadIfChanged() {
  {
    std::lock_guard reload_lock(reload_mu_);
    if (Stamps() == last_stamps_) return Status::Ok();
  }
  return Reload();
}

}  // namespace kinference::policy
