// api/labels.h — a compact, immutable label map for cached projections.
//
// Nodes of a KubeVirt cluster carry 100+ labels each (node-labeller's cpu-model,
// cpu-feature and host-model labels), the same keys and values on every node. Labels
// stores each key and value as a pointer into a process-wide intern pool, so a label
// costs 16 bytes per object and a lookup by interned key is a binary search over
// pointers. The pool is append-only (label vocabularies of a cluster grow slowly) and
// thread-safe.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kmt::api {

// The pooled copy of `s` (inserted on first use). Stable for the life of the process.
const std::string* Intern(std::string_view s);
// The pooled copy if `s` was ever interned, else nullptr (no insertion): a key nobody
// interned is on no object.
const std::string* FindInterned(std::string_view s);

class Labels {
 public:
  using Entry = std::pair<const std::string*, const std::string*>;  // interned key, value

  Labels() = default;
  explicit Labels(const std::vector<std::pair<std::string, std::string>>& kv);
  Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv);
  // From a JSON object of string values (metadata.labels); other shapes → empty,
  // non-string values skipped.
  static Labels FromJson(const nlohmann::json& j);

  // The value for `key`, or nullptr.
  const std::string* Find(std::string_view key) const;
  // Fast path: `key` must be an interned pointer (or nullptr, which finds nothing).
  const std::string* FindInterned(const std::string* key) const;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Entries sorted by key text (for output; internal order is by pointer).
  std::vector<std::pair<std::string, std::string>> Sorted() const;
  nlohmann::json ToJson() const;

  bool operator==(const Labels& o) const { return entries_ == o.entries_; }

 private:
  void Normalize();
  std::vector<Entry> entries_;  // sorted by key pointer, unique keys
};

}  // namespace kmt::api
