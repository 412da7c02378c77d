// api/labels.h — a compact, immutable label map for cached projections.
//
// Nodes of a KubeVirt cluster carry 100+ labels each (node-labeller's cpu-model,
// cpu-feature and host-model labels), the same keys and values on every node. Labels
// stores each key and value as a 32-bit id into a process-wide intern pool, so a label
// costs 8 bytes per object, and a lookup by id is a binary search over integers (the
// explainer resolves its keys to ids once per pod). The pool is append-only (the label
// vocabulary of a cluster grows slowly) and thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kmt::api {

// Id of an interned text; kNoIntern is "never interned" (so on no object).
using InternId = uint32_t;
inline constexpr InternId kNoIntern = 0;

// The pooled copy of `s` (inserted on first use). Stable for the life of the process.
const std::string* Intern(std::string_view s);
// The pooled copy if `s` was ever interned, else nullptr (no insertion).
const std::string* FindInterned(std::string_view s);
// Ids: InternId of `s` (inserted on first use) / without insertion (kNoIntern if absent).
InternId InternIdOf(std::string_view s);
InternId FindInternId(std::string_view s);
// The text of an id (kNoIntern and unknown ids: "").
const std::string& InternText(InternId id);

class Labels {
 public:
  using Entry = std::pair<InternId, InternId>;  // key, value

  Labels() = default;
  explicit Labels(const std::vector<std::pair<std::string, std::string>>& kv);
  Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv);
  // From a JSON object of string values (metadata.labels); other shapes → empty,
  // non-string values skipped.
  static Labels FromJson(const nlohmann::json& j);

  // The value for `key`, or nullptr. The pointer stays valid for the process' life.
  const std::string* Find(std::string_view key) const;
  // Fast path: the value id for a key id, kNoIntern when absent.
  InternId FindId(InternId key) const;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Entries sorted by key text (for output; internal order is by id).
  std::vector<std::pair<std::string, std::string>> Sorted() const;
  nlohmann::json ToJson() const;

  bool operator==(const Labels& o) const { return entries_ == o.entries_; }

 private:
  void Normalize();
  std::vector<Entry> entries_;  // sorted by key id, unique keys
};

}  // namespace kmt::api
