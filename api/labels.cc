#include "api/labels.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace kmt::api {
namespace {

class Pool {
 public:
  InternId Find(std::string_view s) const {
    std::shared_lock lock(mu_);
    auto it = ids_.find(s);
    return it == ids_.end() ? kNoIntern : it->second;
  }
  InternId Intern(std::string_view s) {
    if (InternId id = Find(s); id != kNoIntern) return id;
    std::unique_lock lock(mu_);
    if (auto it = ids_.find(s); it != ids_.end()) return it->second;
    texts_.emplace_back(s);
    const auto id = static_cast<InternId>(texts_.size());
    ids_.emplace(texts_.back(), id);  // the view points into the deque: addresses are stable
    return id;
  }
  const std::string& Text(InternId id) const {
    static const std::string empty;
    std::shared_lock lock(mu_);
    return (id == kNoIntern || id > texts_.size()) ? empty : texts_[id - 1];
  }

 private:
  mutable std::shared_mutex mu_;
  std::deque<std::string> texts_;  // id - 1 → text
  std::unordered_map<std::string_view, InternId> ids_;
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // never destroyed: ids and pointers outlive statics
  return *pool;
}

}  // namespace

InternId InternIdOf(std::string_view s) { return ThePool().Intern(s); }
InternId FindInternId(std::string_view s) { return ThePool().Find(s); }
const std::string& InternText(InternId id) { return ThePool().Text(id); }
const std::string* Intern(std::string_view s) { return &InternText(InternIdOf(s)); }
const std::string* FindInterned(std::string_view s) {
  const InternId id = FindInternId(s);
  return id == kNoIntern ? nullptr : &InternText(id);
}

Labels::Labels(const std::vector<std::pair<std::string, std::string>>& kv) {
  entries_.reserve(kv.size());
  for (const auto& [k, v] : kv) entries_.emplace_back(InternIdOf(k), InternIdOf(v));
  Normalize();
}

Labels::Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  entries_.reserve(kv.size());
  for (const auto& [k, v] : kv) entries_.emplace_back(InternIdOf(k), InternIdOf(v));
  Normalize();
}

Labels Labels::FromJson(const nlohmann::json& j) {
  Labels l;
  if (!j.is_object()) return l;
  l.entries_.reserve(j.size());
  for (const auto& [k, v] : j.items()) {
    if (v.is_string())
      l.entries_.emplace_back(InternIdOf(k), InternIdOf(v.get_ref<const std::string&>()));
  }
  l.Normalize();
  return l;
}

void Labels::Normalize() {
  // Stable, so the first of duplicate keys (initializer lists) wins.
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.first < b.first; });
  entries_.erase(std::unique(entries_.begin(), entries_.end(),
                             [](const Entry& a, const Entry& b) { return a.first == b.first; }),
                 entries_.end());
  entries_.shrink_to_fit();
}

InternId Labels::FindId(InternId key) const {
  if (key == kNoIntern) return kNoIntern;
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, InternId k) { return e.first < k; });
  return (it != entries_.end() && it->first == key) ? it->second : kNoIntern;
}

const std::string* Labels::Find(std::string_view key) const {
  const InternId v = FindId(FindInternId(key));
  return v == kNoIntern ? nullptr : &InternText(v);
}

std::vector<std::pair<std::string, std::string>> Labels::Sorted() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(entries_.size());
  for (const auto& [k, v] : entries_) out.emplace_back(InternText(k), InternText(v));
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json Labels::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : entries_) j[InternText(k)] = InternText(v);
  return j;
}

}  // namespace kmt::api
