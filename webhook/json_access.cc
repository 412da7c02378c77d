#include "webhook/json_access.h"

namespace kmt::webhook {

const nlohmann::json* Member(const nlohmann::json& root,
                             std::initializer_list<std::string_view> path) {
  const nlohmann::json* at = &root;
  for (std::string_view key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at->is_null() ? nullptr : at;
}

std::string StringAt(const nlohmann::json& root, std::initializer_list<std::string_view> path) {
  const nlohmann::json* v = Member(root, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace kmt::webhook
