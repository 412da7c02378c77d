// kube/reads.cc
#include "kube/reads.h"

#include "kube/error.h"

namespace kmt::kube {

std::optional<Json> GetIfExists(KubeClient& client, const Resource& r, std::string_view ns,
                                std::string_view name) {
  try {
    return client.Get(r, ns, name);
  } catch (const KubeError& e) {
    if (DispositionOf(e) == Disposition::kAbsent) return std::nullopt;
    throw;
  }
}

const Json* Member(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* at = &root;
  for (std::string_view key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at->is_null() ? nullptr : at;
}

std::string StringAt(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* v = Member(root, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace kmt::kube
