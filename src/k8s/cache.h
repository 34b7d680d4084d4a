// ObjectCache: a reflector's local copy of one resource collection, keyed by
// "namespace/name" (client-go's cache.Store with MetaNamespaceKeyFunc), and the changes
// that updating it produces (what an informer hands its event handlers).
//
// Apply* return the change they made, if any: an object seen again with the same
// metadata.resourceVersion is no change (a relist of an unchanged collection fires nothing,
// unlike client-go's resync). Replace (after a LIST) reports objects gone from the list as
// deletions, as client-go's DeltaFIFO.Replace does ("DeletedFinalStateUnknown").
//
// Thread-safety: not thread-safe; one owner (the reflector's io_context thread). Objects
// are immutable and shared (ObjectPtr), so a consumer may keep them.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "k8s/resource.h"

namespace kinference::k8s {

enum class ChangeType { kAdded, kModified, kDeleted };
const char* ToString(ChangeType t);

struct Change {
  ChangeType type = ChangeType::kAdded;
  ObjectKey key;
  ObjectPtr object;  // the new object; for kDeleted the last one known
  ObjectPtr old;     // kModified: the previous object
};

class ObjectCache {
 public:
  // Inserts or replaces; kAdded or kModified, none when the resourceVersion is unchanged.
  std::optional<Change> Upsert(ObjectPtr object);
  // Removes `key`; kDeleted (with `last`, the deletion event's object, when given) or none
  // when the key was not cached.
  std::optional<Change> Remove(const ObjectKey& key, ObjectPtr last = nullptr);
  // Makes the cache hold exactly `objects`; the changes in key order.
  std::vector<Change> Replace(std::vector<ObjectPtr> objects);

  ObjectPtr Get(const ObjectKey& key) const;
  const std::map<ObjectKey, ObjectPtr>& items() const { return items_; }
  size_t size() const { return items_.size(); }

 private:
  std::map<ObjectKey, ObjectPtr> items_;
};

}  // namespace kinference::k8s
