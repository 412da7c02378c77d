#include "api/labels.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

namespace kmt::api {
namespace {

struct Hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Append-only: node-based set, so element addresses never change.
class Pool {
 public:
  const std::string* Find(std::string_view s) const {
    std::shared_lock lock(mu_);
    auto it = set_.find(s);
    return it == set_.end() ? nullptr : &*it;
  }
  const std::string* Intern(std::string_view s) {
    if (const std::string* p = Find(s)) return p;
    std::unique_lock lock(mu_);
    return &*set_.emplace(s).first;
  }

 private:
  mutable std::shared_mutex mu_;
  std::unordered_set<std::string, Hash, std::equal_to<>> set_;
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // never destroyed: pointers into it outlive statics
  return *pool;
}

bool ByKey(const Labels::Entry& a, const Labels::Entry& b) {
  return std::less<const std::string*>{}(a.first, b.first);
}

}  // namespace

const std::string* Intern(std::string_view s) { return ThePool().Intern(s); }
const std::string* FindInterned(std::string_view s) { return ThePool().Find(s); }

Labels::Labels(const std::vector<std::pair<std::string, std::string>>& kv) {
  entries_.reserve(kv.size());
  for (const auto& [k, v] : kv) entries_.emplace_back(Intern(k), Intern(v));
  Normalize();
}

Labels::Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  entries_.reserve(kv.size());
  for (const auto& [k, v] : kv) entries_.emplace_back(Intern(k), Intern(v));
  Normalize();
}

Labels Labels::FromJson(const nlohmann::json& j) {
  Labels l;
  if (!j.is_object()) return l;
  l.entries_.reserve(j.size());
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) l.entries_.emplace_back(Intern(k), Intern(v.get_ref<const std::string&>()));
  }
  l.Normalize();
  return l;
}

void Labels::Normalize() {
  // Stable, so the last of duplicate keys (initializer lists) is dropped consistently.
  std::stable_sort(entries_.begin(), entries_.end(), ByKey);
  entries_.erase(std::unique(entries_.begin(), entries_.end(),
                             [](const Entry& a, const Entry& b) { return a.first == b.first; }),
                 entries_.end());
  entries_.shrink_to_fit();
}

const std::string* Labels::Find(std::string_view key) const {
  return FindInterned(api::FindInterned(key));
}

const std::string* Labels::FindInterned(const std::string* key) const {
  if (key == nullptr) return nullptr;
  auto it = std::lower_bound(entries_.begin(), entries_.end(), Entry{key, nullptr}, ByKey);
  return (it != entries_.end() && it->first == key) ? it->second : nullptr;
}

std::vector<std::pair<std::string, std::string>> Labels::Sorted() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(entries_.size());
  for (const auto& [k, v] : entries_) out.emplace_back(*k, *v);
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json Labels::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : entries_) j[*k] = *v;
  return j;
}

}  // namespace kmt::api
