// api/labels.h — a compact, immutable label map for cached projections, over a
// reference-counted intern pool.
//
// Nodes of a KubeVirt cluster carry 100+ labels each (node-labeller's cpu-model,
// cpu-feature and host-model labels), the same keys and values on every node. Labels
// stores each key and value as a 32-bit id into a process-wide intern pool, so a label
// costs 8 bytes per object, and a lookup by id is a binary search over integers (the
// explainer resolves its keys to ids once per pod).
//
// The pool holds a text only while something refers to it: every Labels holding the id,
// every InternedString handle. Per-object values (pod uids in kubevirt.io/created-by,
// pod-template-hash, node names, the cluster autoscaler's timestamp taints) go when the
// last object carrying them goes, and their ids are reused, so a long-running operator's
// pool is bounded by what its caches hold, not by everything they ever held.
//
// Identical label sets share one immutable block (the label set of every pod of one
// ReplicaSet, every target pod's nodeSelector): a Labels is one pointer, copying it is an
// atomic increment, and == compares pointers. Everything here is thread-safe.
//
// Sets that differ only outside node-labeller's labels share those too: KubeVirt's
// node-labeller gives every node of one CPU model the same ~100 labels (IsNodeLabellerKey),
// next to the node's own hostname and zone. A set with at least kMinSharedLabels of them
// keeps them as one shared set of their own, refcounted like any set and gone with the last
// node of that model, and holds only the rest itself; lookups search both (a second binary
// search on a miss). The split is decided by the keys alone, so equal sets are still one
// block. Nothing is pooled per value beyond the texts themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kmt::api {

// Id of an interned text; kNoIntern is "no text" (so on no object).
using InternId = uint32_t;
inline constexpr InternId kNoIntern = 0;

namespace internal {
struct PoolEntry;
struct LabelSet;
}  // namespace internal

// A counted reference to a pooled text: 8 bytes, compared by identity (two handles of
// one text are equal). The text stays at one address while any handle or Labels holds it.
class InternedString {
 public:
  InternedString() = default;  // no text: get() is nullptr, str() is ""
  explicit InternedString(std::string_view s);
  InternedString(const InternedString& o);
  InternedString(InternedString&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  InternedString& operator=(const InternedString& o);
  InternedString& operator=(InternedString&& o) noexcept;
  ~InternedString();

  const std::string* get() const;
  const std::string& str() const;
  const std::string& operator*() const { return str(); }
  const std::string* operator->() const { return &str(); }
  InternId id() const;
  explicit operator bool() const { return e_ != nullptr; }

  friend bool operator==(const InternedString& a, const InternedString& b) { return a.e_ == b.e_; }
  friend bool operator==(const InternedString& a, const std::string* b) { return a.get() == b; }

 private:
  internal::PoolEntry* e_ = nullptr;
};

// A handle on the pooled copy of `s` (inserted on first use).
InternedString Intern(std::string_view s);
// The pooled copy / its id if something holds `s` now, else nullptr / kNoIntern (no
// insertion, no reference). Only for comparing with objects that already exist: a text
// nobody holds is on no object, and its id may later name another text.
const std::string* FindInterned(std::string_view s);
InternId FindInternId(std::string_view s);
// The text of an id that a live Labels or handle holds (kNoIntern: "").
const std::string& InternText(InternId id);

// What the pool holds now (for tests and the memory tooling).
struct InternStats {
  size_t texts = 0;       // distinct texts referred to
  size_t slots = 0;       // entries allocated (texts + free ones for reuse): the peak
  size_t label_sets = 0;  // distinct label sets
};
InternStats InternPoolStats();

// A key node-labeller writes, the same on every node of one CPU model: prefix
// *.node.kubevirt.io, node.kubevirt.io or node-labeller.kubevirt.io, except the TSC frequency
// labels (the host's own).
bool IsNodeLabellerKey(std::string_view key);
// How many such labels a set needs before they are kept as a shared set of their own.
inline constexpr size_t kMinSharedLabels = 16;

class Labels {
 public:
  using Entry = std::pair<InternId, InternId>;  // key, value

  Labels() = default;
  explicit Labels(const std::vector<std::pair<std::string, std::string>>& kv);
  Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv);
  // From a JSON object of string values (metadata.labels); other shapes → empty,
  // non-string values skipped.
  static Labels FromJson(const nlohmann::json& j);

  Labels(const Labels& o);
  Labels(Labels&& o) noexcept : set_(o.set_) { o.set_ = nullptr; }
  Labels& operator=(const Labels& o);
  Labels& operator=(Labels&& o) noexcept;
  ~Labels();

  // The value for `key`, or nullptr. The pointer stays valid while this Labels (or a
  // copy of it) lives.
  const std::string* Find(std::string_view key) const;
  // Fast path: the value id for a key id, kNoIntern when absent.
  InternId FindId(InternId key) const;

  size_t size() const;
  bool empty() const { return set_ == nullptr; }
  // Entries sorted by key text (for output; internal order is by id).
  std::vector<std::pair<std::string, std::string>> Sorted() const;
  nlohmann::json ToJson() const;

  // Equal sets share one block: pointer equality.
  bool operator==(const Labels& o) const { return set_ == o.set_; }

 private:
  // Takes the references of `entries` (acquired ids) and returns the shared set.
  static Labels Make(std::vector<Entry> entries);

  internal::LabelSet* set_ = nullptr;  // nullptr: no labels
};

}  // namespace kmt::api
