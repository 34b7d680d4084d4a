#include "k8s/cache.h"

namespace kinference::k8s {

const char* ToString(ChangeType t) {
  switch (t) {
    case ChangeType::kAdded:
      return "added";
    case ChangeType::kModified:
      return "modified";
    case ChangeType::kDeleted:
      return "deleted";
  }
  return "?";
}

std::optional<Change> ObjectCache::Upsert(ObjectPtr object) {
  ObjectKey key = KeyOf(*object);
  auto it = items_.find(key);
  if (it == items_.end()) {
    items_.emplace(key, object);
    return Change{ChangeType::kAdded, std::move(key), std::move(object), nullptr};
  }
  if (ResourceVersionOf(*it->second) == ResourceVersionOf(*object) &&
      !ResourceVersionOf(*object).empty()) {
    return std::nullopt;
  }
  ObjectPtr old = std::move(it->second);
  it->second = object;
  return Change{ChangeType::kModified, std::move(key), std::move(object), std::move(old)};
}

std::optional<Change> ObjectCache::Remove(const ObjectKey& key, ObjectPtr last) {
  auto it = items_.find(key);
  if (it == items_.end()) return std::nullopt;
  ObjectPtr object = last ? std::move(last) : it->second;
  items_.erase(it);
  return Change{ChangeType::kDeleted, key, std::move(object), nullptr};
}

std::vector<Change> ObjectCache::Replace(std::vector<ObjectPtr> objects) {
  std::map<ObjectKey, ObjectPtr> fresh;
  for (auto& o : objects) {
    ObjectKey key = KeyOf(*o);
    fresh[key] = std::move(o);
  }
  std::vector<Change> changes;
  // Both maps are ordered by key: walk them together.
  auto a = items_.begin();
  auto b = fresh.begin();
  while (a != items_.end() || b != fresh.end()) {
    if (b == fresh.end() || (a != items_.end() && a->first < b->first)) {
      changes.push_back(Change{ChangeType::kDeleted, a->first, a->second, nullptr});
      ++a;
    } else if (a == items_.end() || b->first < a->first) {
      changes.push_back(Change{ChangeType::kAdded, b->first, b->second, nullptr});
      ++b;
    } else {
      if (ResourceVersionOf(*a->second) != ResourceVersionOf(*b->second) ||
          ResourceVersionOf(*b->second).empty()) {
        changes.push_back(Change{ChangeType::kModified, b->first, b->second, a->second});
      }
      ++a;
      ++b;
    }
  }
  items_ = std::move(fresh);
  return changes;
}

ObjectPtr ObjectCache::Get(const ObjectKey& key) const {
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

}  // namespace kinference::k8s
