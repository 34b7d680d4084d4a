#include "k8s/resource.h"

#include <fmt/format.h>

namespace kinference::k8s {

std::string ResourceType::ApiVersion() const {
  return group.empty() ? std::string(version) : fmt::format("{}/{}", group, version);
}

namespace {
std::string Prefix(const ResourceType& type) {
  return type.group.empty() ? fmt::format("/api/{}", type.version)
                            : fmt::format("/apis/{}/{}", type.group, type.version);
}
}  // namespace

std::string CollectionPath(const ResourceType& type, std::string_view ns) {
  if (!type.namespaced || ns.empty()) return fmt::format("{}/{}", Prefix(type), type.resource);
  return fmt::format("{}/namespaces/{}/{}", Prefix(type), ns, type.resource);
}

std::string ObjectPath(const ResourceType& type, std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", CollectionPath(type, ns), name);
}

std::string StatusPath(const ResourceType& type, std::string_view ns, std::string_view name) {
  return ObjectPath(type, ns, name) + "/status";
}

std::string QueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

ObjectKey KeyOf(std::string_view ns, std::string_view name) {
  return ns.empty() ? std::string(name) : fmt::format("{}/{}", ns, name);
}

const boost::json::value* Find(const boost::json::object& obj,
                               std::initializer_list<std::string_view> path) {
  const boost::json::object* at = &obj;
  const boost::json::value* v = nullptr;
  for (auto key : path) {
    if (at == nullptr) return nullptr;
    v = at->if_contains(key);
    if (v == nullptr) return nullptr;
    at = v->if_object();
  }
  return v;
}

std::string_view StringAt(const boost::json::object& obj,
                          std::initializer_list<std::string_view> path) {
  const auto* v = Find(obj, path);
  if (v == nullptr || !v->is_string()) return {};
  return v->get_string();
}

const boost::json::object* ObjectAt(const boost::json::object& obj,
                                    std::initializer_list<std::string_view> path) {
  const auto* v = Find(obj, path);
  return v == nullptr ? nullptr : v->if_object();
}

std::string_view NameOf(const boost::json::object& obj) {
  return StringAt(obj, {"metadata", "name"});
}
std::string_view NamespaceOf(const boost::json::object& obj) {
  return StringAt(obj, {"metadata", "namespace"});
}
std::string_view UidOf(const boost::json::object& obj) {
  return StringAt(obj, {"metadata", "uid"});
}
std::string_view ResourceVersionOf(const boost::json::object& obj) {
  return StringAt(obj, {"metadata", "resourceVersion"});
}
int64_t GenerationOf(const boost::json::object& obj) {
  const auto* v = Find(obj, {"metadata", "generation"});
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  return 0;
}
ObjectKey KeyOf(const boost::json::object& obj) { return KeyOf(NamespaceOf(obj), NameOf(obj)); }

std::string_view LabelOf(const boost::json::object& obj, std::string_view key) {
  const auto* labels = ObjectAt(obj, {"metadata", "labels"});
  if (labels == nullptr) return {};
  const auto* v = labels->if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

}  // namespace kinference::k8s
