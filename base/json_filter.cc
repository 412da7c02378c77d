// base/json_filter.cc
#include "base/json_filter.h"

#include <utility>
#include <vector>

namespace kmt::base {

JsonFilter::Verdict JsonFilter::Element(const JsonScope& /*array*/) { return Verdict::Whole(); }

void JsonFilter::End(const JsonScope& /*scope*/, Json& /*container*/) {}

ObjectReads::ObjectReads(std::initializer_list<Path> paths) {
  for (const Path& path : paths) Add(path);
}

ObjectReads::ObjectReads(const std::vector<Path>& paths) {
  for (const Path& path : paths) Add(path);
}

ObjectReads ObjectReads::With(const std::vector<Path>& more) const {
  ObjectReads out(paths_);
  for (const Path& path : more) out.Add(path);
  return out;
}

void ObjectReads::Add(const Path& path) {
  paths_.push_back(path);
  Node* node = &root_;
  for (const std::string& name : path) {
    if (node->whole) return;  // read whole already
    node = &node->members[name];
  }
  node->whole = true;
  node->members.clear();
}

JsonFilter::Verdict ObjectReads::Member(const Node& node, std::string_view key, int kind) {
  auto it = node.members.find(key);
  if (it == node.members.end()) return JsonFilter::Verdict::Skip();
  return it->second.whole ? JsonFilter::Verdict::Whole()
                          : JsonFilter::Verdict::Filter({kind, &it->second});
}

void ObjectReads::Keep(const Node& node, Json& value) {
  if (node.whole) return;
  if (value.is_array()) {
    for (Json& element : value) Keep(node, element);
    return;
  }
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end();) {
    auto read = node.members.find(it.key());
    if (read == node.members.end()) {
      it = value.erase(it);
    } else {
      Keep(read->second, it.value());
      ++it;
    }
  }
}

namespace {

using Keep = JsonFilter::Verdict::Keep;

// nlohmann's SAX interface over a DOM under construction. `open_` holds the containers being
// built, innermost last; pointers into them stay valid because a container only grows while
// its last member or element is open (std::map nodes never move; a vector's last element is
// not moved by anything but a later push_back onto the same vector, which waits for it to end).
class FilteredDom {
 public:
  FilteredDom(JsonFilter& filter, JsonFilter::Verdict root) : filter_(filter), next_(root) {
    if (next_.keep == Keep::kSkip) next_ = JsonFilter::Verdict::Whole();
  }

  Json& result() { return root_; }
  std::string& error() { return error_; }

  bool null() { return Scalar(nullptr); }
  bool boolean(bool v) { return Scalar(v); }
  bool number_integer(Json::number_integer_t v) { return Scalar(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return Scalar(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& /*text*/) { return Scalar(v); }
  // Copied, not moved: the parser reuses its buffer (and its capacity) for the next token.
  bool string(Json::string_t& v) { return Scalar(v); }
  bool binary(Json::binary_t& v) { return Scalar(v); }
  bool start_object(size_t /*elements*/) { return Open(Json::value_t::object); }
  bool start_array(size_t /*elements*/) { return Open(Json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(Json::string_t& k) {
    if (skipping_ > 0) return true;
    Frame& parent = open_.back();
    next_ = parent.filtered ? filter_.Member(parent.scope, k) : JsonFilter::Verdict::Whole();
    // std::map's own operator[]: the key is copied only when it is new.
    slot_ = next_.keep == Keep::kSkip ? nullptr : &parent.value->get_ref<Json::object_t&>()[k];
    return true;
  }

  bool parse_error(size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

 private:
  struct Frame {
    Json* value;
    JsonScope scope;
    bool filtered;  // entered with kFilter: the filter decides its members or elements
  };

  // Where the value about to be read goes, with next_ its verdict; nullptr when it is skipped.
  Json* Slot() {
    if (open_.empty()) return &root_;
    Frame& parent = open_.back();
    if (!parent.value->is_array()) return slot_;  // set by key()
    next_ = parent.filtered ? filter_.Element(parent.scope) : JsonFilter::Verdict::Whole();
    if (next_.keep == Keep::kSkip) return nullptr;
    parent.value->push_back(nullptr);
    return &parent.value->back();
  }

  template <typename T>
  bool Scalar(T&& v) {
    if (skipping_ > 0) return true;
    if (Json* slot = Slot()) *slot = std::forward<T>(v);
    return true;
  }

  bool Open(Json::value_t type) {
    if (skipping_ > 0) {
      ++skipping_;
      return true;
    }
    Json* slot = Slot();
    if (slot == nullptr) {
      skipping_ = 1;
      return true;
    }
    *slot = Json(type);
    open_.push_back(Frame{slot, next_.scope, next_.keep == Keep::kFilter});
    return true;
  }

  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    const Frame done = open_.back();
    open_.pop_back();
    if (done.filtered) filter_.End(done.scope, *done.value);
    return true;
  }

  JsonFilter& filter_;
  Json root_;
  std::vector<Frame> open_;
  JsonFilter::Verdict next_;  // the verdict on the value about to be read
  Json* slot_ = nullptr;      // where an object member's value goes (key() sets it)
  size_t skipping_ = 0;       // > 0: inside a skipped container, its nesting
  std::string error_;
};

}  // namespace

Json ParseFiltered(std::string_view text, JsonFilter& filter, JsonFilter::Verdict root,
                   std::string* error) {
  FilteredDom dom(filter, root);
  if (!Json::sax_parse(text.begin(), text.end(), &dom)) {
    if (error != nullptr) *error = std::move(dom.error());
    Json discarded(Json::value_t::discarded);  // not {...}: that would be an array of it
    return discarded;
  }
  return std::move(dom.result());
}

}  // namespace kmt::base
