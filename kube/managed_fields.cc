// kube/managed_fields.cc
#include "kube/managed_fields.h"

#include <algorithm>
#include <string>

#include "base/json_filter.h"

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

using Reads = base::ObjectReads;

bool IsStatusMember(std::string_view key) {
  return std::ranges::find(kStatusMembers, key) != std::end(kStatusMembers);
}

// The node of `key` in `in` when the member is read through one; nullptr when it is read whole
// (or `in` is nullptr: everything is read). `read` says whether the member is read at all.
const Reads::Node* Through(const Reads::Node* in, std::string_view key, bool& read) {
  read = true;
  if (in == nullptr) return nullptr;
  auto it = in->members.find(key);
  if (it == in->members.end()) {
    read = false;
    return nullptr;
  }
  return it->second.whole ? nullptr : &it->second;
}

// What each container the filter sees inside is, for the objects at `at`.
enum Kind : int {
  kListRoot,   // {"items": [...]}: its items are objects
  kEventRoot,  // {"object": ...}: its object is one
  kItems,      // the items array
  kObject,     // an object to trim: its metadata is filtered, its members read (trim.reads)
  kMetadata,   // the object's metadata (data: the node it is read through, or nullptr)
  kLabels,     // metadata.labels, within the budget (data: as kMetadata)
  kReads,      // a member read through a node of trim.reads (data: the node)
};

class Trim final : public base::JsonFilter {
 public:
  explicit Trim(const ObjectTrim& trim)
      : trim_(trim),
        root_(trim.reads == nullptr ? nullptr : &trim.reads->root()),
        budget_(trim.max_label_bytes) {}

  Verdict Member(const base::JsonScope& in, std::string_view key) override {
    switch (in.kind) {
      case kListRoot:
        return key == "items" ? Verdict::Filter({kItems}) : Verdict::Whole();
      case kEventRoot:
        return key == "object" ? Verdict::Filter({kObject}) : Verdict::Whole();
      case kObject: {
        bool read = true;
        const Reads::Node* node = Through(root_, key, read);
        if (key == "metadata") {
          if (!read) return Verdict::Skip();
          budget_ = LabelBudget(trim_.max_label_bytes);  // each object has a budget of its own
          return Verdict::Filter({kMetadata, node});
        }
        if (!read) return IsStatusMember(key) ? Verdict::Whole() : Verdict::Skip();
        return node == nullptr ? Verdict::Whole() : Verdict::Filter({kReads, node});
      }
      case kMetadata: {
        if (trim_.managed_fields && key == "managedFields") return Verdict::Skip();
        bool read = true;
        const Reads::Node* node = Through(static_cast<const Reads::Node*>(in.data), key, read);
        if (!read) return Verdict::Skip();
        if (trim_.max_label_bytes > 0 && key == "labels") return Verdict::Filter({kLabels, node});
        return node == nullptr ? Verdict::Whole() : Verdict::Filter({kReads, node});
      }
      case kLabels: {
        bool read = true;
        const Reads::Node* node = Through(static_cast<const Reads::Node*>(in.data), key, read);
        if (!read || !budget_.Keep(key)) return Verdict::Skip();
        return node == nullptr ? Verdict::Whole() : Verdict::Filter({kReads, node});
      }
      case kReads:
        return Reads::Member(*static_cast<const Reads::Node*>(in.data), key, kReads);
      default:
        return Verdict::Whole();  // "items" that is an object: nothing in it is trimmed
    }
  }

  Verdict Element(const base::JsonScope& in) override {
    if (in.kind == kItems) return Verdict::Filter({kObject});
    return in.kind == kReads ? Verdict::Filter(in) : Verdict::Whole();
  }

  void End(const base::JsonScope& in, Json& container) override {
    if (in.kind == kMetadata && container.is_object() && budget_.dropped() > 0) {
      container[std::string(kLabelsDropped)] = budget_.dropped();
    }
  }

 private:
  const ObjectTrim& trim_;
  const Reads::Node* root_;  // what is read of each object; nullptr: all of it
  LabelBudget budget_;       // of the metadata being read (metadata holds no other object's)
};

}  // namespace

Json ParseTrimmed(std::string_view text, ObjectsAt at, const ObjectTrim& trim) {
  if (!trim.any()) return Json::parse(text, nullptr, /*allow_exceptions=*/false);
  Trim filter(trim);
  Kind root = kObject;
  switch (at) {
    case ObjectsAt::kTop:
      root = kObject;
      break;
    case ObjectsAt::kListItems:
      root = kListRoot;
      break;
    case ObjectsAt::kWatchEvent:
      root = kEventRoot;
      break;
  }
  return base::ParseFiltered(text, filter, base::JsonFilter::Verdict::Filter({root}));
}

void TrimObject(Json& object, const ObjectTrim& trim) {
  if (!object.is_object()) return;
  if (trim.reads != nullptr) {
    const Reads::Node& root = trim.reads->root();
    for (auto it = object.begin(); it != object.end();) {
      bool read = true;
      const Reads::Node* node = Through(&root, it.key(), read);
      if (!read && !IsStatusMember(it.key())) {
        it = object.erase(it);
        continue;
      }
      // metadata.labels are read before the budget is applied, as ParseTrimmed does.
      if (node != nullptr) Reads::Keep(*node, it.value());
      ++it;
    }
  }
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
