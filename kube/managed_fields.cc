// kube/managed_fields.cc
#include "kube/managed_fields.h"

#include <array>

namespace kmt::kube {

Json ParseOmittingManagedFields(std::string_view text, ObjectsAt at) {
  // The keys that must lead, by nesting depth, to the member to skip (arrays add a depth
  // without a key). nlohmann reports a member's key at the depth of its object.
  struct Step {
    int depth;
    std::string_view key;
  };
  std::array<Step, 3> path{};
  size_t n = 0;
  switch (at) {
    case ObjectsAt::kTop:
      path = {{{1, "metadata"}, {2, "managedFields"}}};
      n = 2;
      break;
    case ObjectsAt::kListItems:
      path = {{{1, "items"}, {3, "metadata"}, {4, "managedFields"}}};
      n = 3;
      break;
    case ObjectsAt::kWatchEvent:
      path = {{{1, "object"}, {2, "metadata"}, {3, "managedFields"}}};
      n = 3;
      break;
  }
  const int target = path[n - 1].depth;
  // on_path[i]: the key most recently seen at path[i].depth was path[i].key.
  std::array<bool, 3> on_path{};
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event != Json::parse_event_t::key || depth > target) return true;
    const std::string& key = parsed.get_ref<const std::string&>();
    for (size_t i = 0; i + 1 < n; ++i) {
      if (path[i].depth == depth) on_path[i] = key == path[i].key;
    }
    if (depth != target || key != path[n - 1].key) return true;
    for (size_t i = 0; i + 1 < n; ++i) {
      if (!on_path[i]) return true;
    }
    return false;  // skip this member and its value
  };
  return Json::parse(text, callback, /*allow_exceptions=*/false);
}

}  // namespace kmt::kube
