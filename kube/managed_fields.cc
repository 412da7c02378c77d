// kube/managed_fields.cc
#include "kube/managed_fields.h"

#include <array>
#include <string>

namespace kmt::kube {

namespace {

// Decides, key by key in the order they come, which labels fit the budget.
class LabelBudget {
 public:
  explicit LabelBudget(size_t max) : left_(max) {}
  bool Keep(std::string_view key) {
    const size_t cost = key.size() + kMaxLabelValueBytes;
    if (dropped_ == 0 && cost <= left_) {
      left_ -= cost;
      return true;
    }
    ++dropped_;  // once one is left out, every later one is too: kept labels are a prefix
    return false;
  }
  size_t dropped() const { return dropped_; }

 private:
  size_t left_;
  size_t dropped_ = 0;
};

}  // namespace

Json ParseTrimmed(std::string_view text, ObjectsAt at, const ObjectTrim& trim) {
  if (!trim.any()) return Json::parse(text, nullptr, /*allow_exceptions=*/false);
  // The keys that lead to the object's metadata, by nesting depth (arrays add a depth
  // without a key). nlohmann reports a member's key at the depth of its object, and an
  // object's end at the depth of the key it is the value of.
  struct Step {
    int depth;
    std::string_view key;
  };
  std::array<Step, 2> path{};
  size_t n = 0;
  switch (at) {
    case ObjectsAt::kTop:
      path = {{{1, "metadata"}}};
      n = 1;
      break;
    case ObjectsAt::kListItems:
      path = {{{1, "items"}, {3, "metadata"}}};
      n = 2;
      break;
    case ObjectsAt::kWatchEvent:
      path = {{{1, "object"}, {2, "metadata"}}};
      n = 2;
      break;
  }
  const int meta_depth = path[n - 1].depth;  // where the key "metadata" is reported
  const int field_depth = meta_depth + 1;    // metadata's own keys
  const int label_depth = meta_depth + 2;    // the label keys
  // on_path[i]: the key most recently seen at path[i].depth was path[i].key.
  std::array<bool, 2> on_path{};
  bool in_labels = false;  // the key most recently seen at field_depth was "labels"
  LabelBudget budget(trim.max_label_bytes);
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_end) {
      // metadata's end: say how many labels were left out.
      if (depth == meta_depth && trim.max_label_bytes > 0 && on_path[n - 1] &&
          budget.dropped() > 0 && parsed.is_object()) {
        parsed[std::string(kLabelsDropped)] = budget.dropped();
      }
      return true;
    }
    if (event != Json::parse_event_t::key || depth > label_depth) return true;
    const auto& key = parsed.get_ref<const std::string&>();
    for (size_t i = 0; i < n; ++i) {
      if (path[i].depth == depth) on_path[i] = key == path[i].key;
    }
    if (depth == meta_depth && on_path[n - 1]) budget = LabelBudget(trim.max_label_bytes);
    for (size_t i = 0; i < n; ++i) {
      if (!on_path[i]) return true;
    }
    if (depth == field_depth) {
      in_labels = key == "labels";
      return !(trim.managed_fields && key == "managedFields");
    }
    if (depth == label_depth && in_labels && trim.max_label_bytes > 0) return budget.Keep(key);
    return true;
  };
  return Json::parse(text, callback, /*allow_exceptions=*/false);
}

void TrimObject(Json& object, const ObjectTrim& trim) {
  if (!object.is_object()) return;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return;
  if (trim.managed_fields) meta->erase("managedFields");
  if (trim.max_label_bytes == 0) return;
  auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return;
  LabelBudget budget(trim.max_label_bytes);
  Json kept = Json::object();
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    if (budget.Keep(it.key())) kept[it.key()] = std::move(it.value());
  }
  *labels = std::move(kept);
  if (budget.dropped() > 0) (*meta)[std::string(kLabelsDropped)] = budget.dropped();
}

}  // namespace kmt::kube
