#include "api/labels.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <utility>

namespace kmt::api {
namespace internal {

// One pooled text. Lives in a deque (never moves); a slot whose text went is reused.
struct PoolEntry {
  std::string text;
  std::atomic<uint32_t> refs{0};  // 0 only on a free slot
  InternId id = kNoIntern;        // its index + 1
};

// One immutable label set, shared by every Labels equal to it; its own entries follow it.
// A node's set holds its node-labeller labels (IsNodeLabellerKey) as a set of their own,
// `shared`, which every node of that CPU model refers to; its own entries are the rest.
struct LabelSet {
  std::atomic<uint32_t> refs;
  uint32_t size;     // own entries
  LabelSet* next;    // chain of its bucket in the set table
  LabelSet* shared;  // holds a reference; nullptr when none (24 bytes of header in all)
  Labels::Entry* entries() { return reinterpret_cast<Labels::Entry*>(this + 1); }
  const Labels::Entry* entries() const { return reinterpret_cast<const Labels::Entry*>(this + 1); }
};

}  // namespace internal

namespace {

using internal::LabelSet;
using internal::PoolEntry;

// Drops one reference unless it is the last one; true when it is (the caller then drops
// it under the lock that new references are handed out under, so a text or set reaches
// zero references only while nobody can find it).
bool DropUnlessLast(std::atomic<uint32_t>& refs) {
  uint32_t r = refs.load(std::memory_order_relaxed);
  while (r > 1) {
    if (refs.compare_exchange_weak(r, r - 1, std::memory_order_acq_rel,
                                   std::memory_order_relaxed)) {
      return false;
    }
  }
  return true;
}

// The ids of the pooled texts, found by text: open addressing with linear probing over 4-byte
// ids (kNoIntern: a free slot), at most half full, so 8-16 bytes a text where an
// unordered_map<string_view, InternId> paid ~60 (a node with its cached hash, and a bucket).
// Only a few texts (node-labeller's) are shared by thousands of objects; most are one object's
// own (a pod's VMI uid), so this is per object. An erase shifts the rest of its run back: no
// tombstones. Not thread-safe (the pool's lock guards it).
class IdTable {
 public:
  explicit IdTable(const std::deque<PoolEntry>& entries) : entries_(entries) {}

  InternId Find(std::string_view s) const {
    if (slots_.empty()) return kNoIntern;
    for (size_t i = Home(s);; i = Next(i)) {
      const InternId id = slots_[i];
      if (id == kNoIntern || Text(id) == s) return id;
    }
  }

  // `id`'s text, which the table does not hold yet.
  void Insert(InternId id) {
    if (2 * (count_ + 1) > slots_.size()) Grow();
    Place(id);
    ++count_;
  }

  // `id`, which the table holds (its text still set).
  void Erase(InternId id) {
    size_t hole = Home(Text(id));
    while (slots_[hole] != id) hole = Next(hole);
    for (size_t j = Next(hole); slots_[j] != kNoIntern; j = Next(j)) {
      // The id at j moves into the hole unless its home lies cyclically in (hole, j].
      const size_t home = Home(Text(slots_[j]));
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = kNoIntern;
    --count_;
  }

  size_t size() const { return count_; }

 private:
  std::string_view Text(InternId id) const { return entries_[id - 1].text; }
  size_t Home(std::string_view s) const {
    return std::hash<std::string_view>{}(s) & (slots_.size() - 1);
  }
  size_t Next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void Place(InternId id) {
    size_t i = Home(Text(id));
    while (slots_[i] != kNoIntern) i = Next(i);
    slots_[i] = id;
  }
  void Grow() {
    std::vector<InternId> old(slots_.empty() ? 64 : 2 * slots_.size(), kNoIntern);
    old.swap(slots_);
    for (const InternId id : old) {
      if (id != kNoIntern) Place(id);
    }
  }

  const std::deque<PoolEntry>& entries_;
  std::vector<InternId> slots_;  // size: a power of two (or 0)
  size_t count_ = 0;
};

class Pool {
 public:
  PoolEntry* Acquire(std::string_view s) {
    {
      std::shared_lock lock(mu_);
      if (const InternId id = ids_.Find(s); id != kNoIntern) return Ref(&entries_[id - 1]);
    }
    std::unique_lock lock(mu_);
    if (const InternId id = ids_.Find(s); id != kNoIntern) return Ref(&entries_[id - 1]);
    PoolEntry* e;
    if (!free_.empty()) {
      e = &entries_[free_.back() - 1];
      free_.pop_back();
    } else {
      e = &entries_.emplace_back();
      e->id = static_cast<InternId>(entries_.size());
    }
    e->text.assign(s);
    e->refs.store(1, std::memory_order_relaxed);
    ids_.Insert(e->id);
    return e;
  }

  static PoolEntry* Ref(PoolEntry* e) {
    e->refs.fetch_add(1, std::memory_order_relaxed);
    return e;
  }

  void Release(PoolEntry* e) {
    if (!DropUnlessLast(e->refs)) return;
    std::unique_lock lock(mu_);
    if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) EraseLocked(e);
  }

  // Releases the key and value of every entry (a label set that went).
  void Release(const Labels::Entry* begin, const Labels::Entry* end) {
    std::vector<PoolEntry*> held;
    held.reserve(2 * static_cast<size_t>(end - begin));
    {
      std::shared_lock lock(mu_);
      for (const Labels::Entry* it = begin; it != end; ++it) {
        held.push_back(&entries_[it->first - 1]);
        held.push_back(&entries_[it->second - 1]);
      }
    }
    std::vector<PoolEntry*> last;
    for (PoolEntry* e : held) {
      if (DropUnlessLast(e->refs)) last.push_back(e);
    }
    if (last.empty()) return;
    std::unique_lock lock(mu_);
    for (PoolEntry* e : last) {
      if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) EraseLocked(e);
    }
  }

  InternId Find(std::string_view s) const {
    std::shared_lock lock(mu_);
    return ids_.Find(s);
  }

  const std::string& Text(InternId id) const {
    static const std::string empty;
    std::shared_lock lock(mu_);
    return (id == kNoIntern || id > entries_.size()) ? empty : entries_[id - 1].text;
  }

  void Stats(InternStats& s) const {
    std::shared_lock lock(mu_);
    s.texts = ids_.size();
    s.slots = entries_.size();
  }

 private:
  void EraseLocked(PoolEntry* e) {
    ids_.Erase(e->id);
    std::string().swap(e->text);
    free_.push_back(e->id);
  }

  mutable std::shared_mutex mu_;
  std::deque<PoolEntry> entries_;  // id - 1 → entry
  IdTable ids_{entries_};
  std::vector<InternId> free_;  // ids of free slots
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // never destroyed: objects with static storage outlive it
  return *pool;
}

size_t HashOf(const Labels::Entry* entries, size_t n, const LabelSet* shared) {
  return std::hash<std::string_view>{}(
             std::string_view(reinterpret_cast<const char*>(entries), n * sizeof(Labels::Entry))) ^
         std::hash<const LabelSet*>{}(shared);
}

size_t HashOf(const LabelSet* s) { return HashOf(s->entries(), s->size, s->shared); }

// The distinct label sets, chained per bucket: no node allocations, and at most two sets
// per bucket on average (~4-8 bytes of table per set). Hashes are recomputed, not stored.
class SetTable {
 public:
  // `entries` (sorted by key id, unique keys, each id holding one reference) and `shared`
  // (a reference, or nullptr) as a shared set holding one reference for the caller: an
  // existing equal set (the entries' and shared's references are then given back) or a new
  // one that takes them over.
  LabelSet* Intern(const std::vector<Labels::Entry>& entries, LabelSet* shared) {
    const size_t hash = HashOf(entries.data(), entries.size(), shared);
    LabelSet* found = nullptr;
    {
      std::scoped_lock lock(mu_);
      if (!buckets_.empty()) {
        for (LabelSet* s = buckets_[hash & (buckets_.size() - 1)]; s != nullptr; s = s->next) {
          if (s->size == entries.size() && s->shared == shared &&
              std::equal(entries.begin(), entries.end(), s->entries())) {
            s->refs.fetch_add(1, std::memory_order_relaxed);
            found = s;
            break;
          }
        }
      }
      if (found == nullptr) {
        void* mem = ::operator new(sizeof(LabelSet) + entries.size() * sizeof(Labels::Entry));
        found = new (mem) LabelSet{{1}, static_cast<uint32_t>(entries.size()), nullptr, shared};
        std::ranges::copy(entries, found->entries());
        if (count_ + 1 > 2 * buckets_.size()) Grow();
        LabelSet*& head = buckets_[hash & (buckets_.size() - 1)];
        found->next = head;
        head = found;
        ++count_;
        return found;
      }
    }
    ThePool().Release(entries.data(), entries.data() + entries.size());
    if (shared != nullptr) Release(shared);  // the found set holds its own reference
    return found;
  }

  static void Ref(LabelSet* s) { s->refs.fetch_add(1, std::memory_order_relaxed); }

  void Release(LabelSet* s) {
    if (!DropUnlessLast(s->refs)) return;
    {
      std::scoped_lock lock(mu_);
      if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      LabelSet** link = &buckets_[HashOf(s) & (buckets_.size() - 1)];
      while (*link != s) link = &(*link)->next;
      *link = s->next;
      --count_;
    }
    ThePool().Release(s->entries(), s->entries() + s->size);
    LabelSet* shared = s->shared;
    s->~LabelSet();
    ::operator delete(s);
    if (shared != nullptr) Release(shared);
  }

  size_t Count() {
    std::scoped_lock lock(mu_);
    return count_;
  }

 private:
  void Grow() {
    std::vector<LabelSet*> grown(buckets_.empty() ? 64 : 2 * buckets_.size(), nullptr);
    for (LabelSet* head : buckets_) {
      while (head != nullptr) {
        LabelSet* next = head->next;
        LabelSet*& slot = grown[HashOf(head) & (grown.size() - 1)];
        head->next = slot;
        slot = head;
        head = next;
      }
    }
    buckets_.swap(grown);
  }

  std::mutex mu_;
  std::vector<LabelSet*> buckets_;  // size: a power of two (or 0)
  size_t count_ = 0;
};

SetTable& TheSets() {
  static auto* sets = new SetTable();  // never destroyed, as the pool
  return *sets;
}

}  // namespace

// ---- InternedString ----

InternedString::InternedString(std::string_view s) : e_(ThePool().Acquire(s)) {}

InternedString::InternedString(const InternedString& o) : e_(o.e_) {
  if (e_ != nullptr) Pool::Ref(e_);
}

InternedString& InternedString::operator=(const InternedString& o) {
  if (this == &o) return *this;
  if (o.e_ != nullptr) Pool::Ref(o.e_);
  if (e_ != nullptr) ThePool().Release(e_);
  e_ = o.e_;
  return *this;
}

InternedString& InternedString::operator=(InternedString&& o) noexcept {
  if (this != &o) {
    if (e_ != nullptr) ThePool().Release(e_);
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

InternedString::~InternedString() {
  if (e_ != nullptr) ThePool().Release(e_);
}

const std::string* InternedString::get() const { return e_ == nullptr ? nullptr : &e_->text; }

const std::string& InternedString::str() const {
  static const std::string empty;
  return e_ == nullptr ? empty : e_->text;
}

InternId InternedString::id() const { return e_ == nullptr ? kNoIntern : e_->id; }

InternedString Intern(std::string_view s) { return InternedString(s); }

InternId FindInternId(std::string_view s) { return ThePool().Find(s); }

const std::string& InternText(InternId id) { return ThePool().Text(id); }

const std::string* FindInterned(std::string_view s) {
  const InternId id = FindInternId(s);
  return id == kNoIntern ? nullptr : &InternText(id);
}

InternStats InternPoolStats() {
  InternStats s;
  ThePool().Stats(s);
  s.label_sets = TheSets().Count();
  return s;
}

// ---- Labels ----

Labels Labels::Make(std::vector<Entry> entries) {
  Labels l;
  if (entries.empty()) return l;
  // Stable, so the first of duplicate keys (initializer lists) wins; the others' references
  // go back.
  std::ranges::stable_sort(entries,
                           [](const Entry& a, const Entry& b) { return a.first < b.first; });
  std::vector<Entry> dropped;
  size_t kept = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (kept > 0 && entries[kept - 1].first == entries[i].first) {
      dropped.push_back(entries[i]);
    } else {
      entries[kept++] = entries[i];
    }
  }
  entries.resize(kept);
  if (!dropped.empty()) ThePool().Release(dropped.data(), dropped.data() + dropped.size());
  // Node-labeller's labels, when a node has enough of them to be worth a set of their own
  // (stable_partition keeps both parts sorted by key id).
  const auto own_end = std::ranges::stable_partition(entries, [](const Entry& e) {
                         return !IsNodeLabellerKey(InternText(e.first));
                       }).begin();
  LabelSet* shared = nullptr;
  if (std::cmp_greater_equal(entries.end() - own_end, kMinSharedLabels)) {
    shared = TheSets().Intern(std::vector<Entry>(own_end, entries.end()), nullptr);
    entries.erase(own_end, entries.end());
  } else {
    std::ranges::sort(entries, {}, &Entry::first);
  }
  l.set_ = TheSets().Intern(entries, shared);
  return l;
}

namespace {
Labels::Entry AcquirePair(std::string_view k, std::string_view v) {
  Pool& pool = ThePool();
  return {pool.Acquire(k)->id, pool.Acquire(v)->id};
}
}  // namespace

Labels::Labels(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::vector<Entry> entries;
  entries.reserve(kv.size());
  for (const auto& [k, v] : kv) entries.push_back(AcquirePair(k, v));
  *this = Make(std::move(entries));
}

Labels::Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  std::vector<Entry> entries;
  entries.reserve(kv.size());
  for (const auto& [k, v] : kv) entries.push_back(AcquirePair(k, v));
  *this = Make(std::move(entries));
}

Labels Labels::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return {};
  std::vector<Entry> entries;
  entries.reserve(j.size());
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) entries.push_back(AcquirePair(k, v.get_ref<const std::string&>()));
  }
  return Make(std::move(entries));
}

Labels::Labels(const Labels& o) : set_(o.set_) {
  if (set_ != nullptr) SetTable::Ref(set_);
}

Labels& Labels::operator=(const Labels& o) {
  if (this == &o) return *this;
  if (o.set_ != nullptr) SetTable::Ref(o.set_);
  if (set_ != nullptr) TheSets().Release(set_);
  set_ = o.set_;
  return *this;
}

Labels& Labels::operator=(Labels&& o) noexcept {
  if (this != &o) {
    if (set_ != nullptr) TheSets().Release(set_);
    set_ = o.set_;
    o.set_ = nullptr;
  }
  return *this;
}

Labels::~Labels() {
  if (set_ != nullptr) TheSets().Release(set_);
}

namespace {

InternId FindIn(const LabelSet* s, InternId key) {
  const Labels::Entry* begin = s->entries();
  const Labels::Entry* end = begin + s->size;
  const Labels::Entry* it = std::ranges::lower_bound(begin, end, key, {}, &Labels::Entry::first);
  return (it != end && it->first == key) ? it->second : kNoIntern;
}

// Calls fn(entry) for every entry of `s`, its own and its shared set's.
template <typename F>
void ForEachEntry(const LabelSet* s, F&& fn) {
  for (; s != nullptr; s = s->shared) {
    for (const Labels::Entry* it = s->entries(); it != s->entries() + s->size; ++it) fn(*it);
  }
}

}  // namespace

bool IsNodeLabellerKey(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view prefix = key.substr(0, slash);
  // The TSC frequency is the host's own, not its CPU model's.
  if (key.find("tsc-frequency", slash) != std::string_view::npos) return false;
  return prefix == "node-labeller.kubevirt.io" || prefix == "node.kubevirt.io" ||
         prefix.ends_with(".node.kubevirt.io");
}

size_t Labels::size() const {
  if (set_ == nullptr) return 0;
  return set_->size + (set_->shared != nullptr ? set_->shared->size : 0);
}

InternId Labels::FindId(InternId key) const {
  if (key == kNoIntern || set_ == nullptr) return kNoIntern;
  const InternId v = FindIn(set_, key);
  if (v != kNoIntern || set_->shared == nullptr) return v;
  return FindIn(set_->shared, key);
}

const std::string* Labels::Find(std::string_view key) const {
  if (set_ == nullptr) return nullptr;
  const InternId v = FindId(FindInternId(key));
  return v == kNoIntern ? nullptr : &InternText(v);
}

std::vector<std::pair<std::string, std::string>> Labels::Sorted() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(size());
  ForEachEntry(
      set_, [&](const Entry& e) { out.emplace_back(InternText(e.first), InternText(e.second)); });
  std::ranges::sort(out);
  return out;
}

nlohmann::json Labels::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  ForEachEntry(set_, [&](const Entry& e) { j[InternText(e.first)] = InternText(e.second); });
  return j;
}

}  // namespace kmt::api
