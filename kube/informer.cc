// kube/informer.cc
#include "kube/informer.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/heap.h"
#include "base/json.h"

#if defined(__GLIBC__)
#endif

namespace kmt::kube {

std::string ObjectKey(const Json& object) {
  const std::string name = base::StringAt(object, {"metadata", "name"});
  const std::string ns = base::StringAt(object, {"metadata", "namespace"});
  return ns.empty() ? name : ns + "/" + name;
}

base::ObjectReads InformerReads(const base::ObjectReads& projection) {
  return projection.With(
      {{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "resourceVersion"}});
}

InformerCore::InformerCore(KubeClient& client, InformerOptions options, Projection projection,
                           base::Clock& clock)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      projection_(std::move(projection)) {
  if (options_.watch.reads != nullptr) {
    reads_ = InformerReads(*options_.watch.reads);
    options_.watch.reads = &*reads_;
  }
  watcher_ = std::make_unique<Watcher>(client_, options_.watch, clock);
}

InformerCore::~InformerCore() { Stop(); }

void InformerCore::AddHandlers(Handlers handlers) { handlers_.push_back(std::move(handlers)); }

void InformerCore::AddIndex(const std::string& name, IndexFunc func) {
  std::scoped_lock lock(mu_);
  index_funcs_.emplace_back(name, std::move(func));
  indexes_.emplace_back();
}

int InformerCore::IndexNumber(const std::string& name) const {
  for (size_t i = 0; i < index_funcs_.size(); ++i) {
    if (index_funcs_[i].first == name) return static_cast<int>(i);
  }
  return -1;
}

void InformerCore::Start() {
  watch_thread_ = std::thread([this] { RunWatch(); });
  if (options_.resync_period.count() > 0) {
    resync_thread_ = std::thread([this] { RunResync(); });
  }
}

void InformerCore::Stop() {
  {
    std::unique_lock<std::mutex> lock(stop_mu_);
    stopping_ = true;
    // A timer that could not be cancelled is firing: its callback still reads this object,
    // until it resets resync_timer_.
    if (resync_timer_ && clock_.Cancel(*resync_timer_)) resync_timer_.reset();
    stop_cv_.wait(lock, [this] { return !resync_timer_; });
  }
  stop_cv_.notify_all();
  watcher_->Cancel();
  if (watch_thread_.joinable()) watch_thread_.join();
  if (resync_thread_.joinable()) resync_thread_.join();
}

void InformerCore::RunWatch() {
  while (!watcher_->cancelled()) Apply(watcher_->Step());
}

// The timer only marks the resync due (its callback must not block the clock's thread); this
// thread runs it, then schedules the next.
void InformerCore::RunResync() {
  std::unique_lock<std::mutex> lock(stop_mu_);
  if (!stopping_) ScheduleResyncLocked();
  while (true) {
    stop_cv_.wait(lock, [this] { return stopping_ || resync_due_; });
    if (stopping_) break;
    resync_due_ = false;
    lock.unlock();
    Resync();
    lock.lock();
    if (!stopping_) ScheduleResyncLocked();
  }
}

void InformerCore::ScheduleResyncLocked() {
  resync_timer_ = clock_.RunAfter(options_.resync_period, [this] {
    std::scoped_lock lock(stop_mu_);
    resync_timer_.reset();
    resync_due_ = true;
    stop_cv_.notify_all();
  });
}

void InformerCore::StepForTest() { Apply(watcher_->Step()); }

bool InformerCore::Project(const Json& object, std::string& key, Projected& p) {
  key = ObjectKey(object);
  try {
    p.obj = projection_(object);
    if (!p.obj) return false;
    p.index_values.reserve(index_funcs_.size());
    for (const auto& [name, func] : index_funcs_) p.index_values.push_back(func(object));
  } catch (const std::exception& e) {
    if (options_.on_error) {
      options_.on_error(KubeError(
          ErrorKind::kInternal,
          fmt::format("projecting {} {}: {}", options_.watch.resource.resource, key, e.what())));
    }
    return false;
  }
  return true;
}

void InformerCore::IndexLocked(const std::string& key, Entry& e,
                               const std::vector<std::vector<std::string>>& values) {
  e.indexed.clear();
  for (size_t i = 0; i < values.size(); ++i) {
    auto& index = indexes_[i];
    for (const std::string& v : values[i]) {
      const auto it = index.try_emplace(v).first;
      it->second.push_back(&key);
      // A value named twice is unindexed once (every copy of the key at once).
      const std::pair<uint32_t, const std::string*> ref(static_cast<uint32_t>(i), &it->first);
      if (std::ranges::find(e.indexed, ref) == e.indexed.end()) e.indexed.push_back(ref);
    }
  }
  e.indexed.shrink_to_fit();
}

void InformerCore::UnindexLocked(const std::string& key, Entry& e) {
  for (const auto& [i, value] : e.indexed) {
    auto& index = indexes_[i];
    const auto it = index.find(*value);
    if (it == index.end()) continue;
    auto& keys = it->second;
    std::erase(keys, &key);
    if (keys.empty()) index.erase(it);
  }
  e.indexed.clear();
}

void InformerCore::Upsert(const std::string& key, Projected p, std::vector<Delivery>& out) {
  auto it = items_.find(key);
  if (it == items_.end()) {
    out.push_back({Delivery::kAdd, key, nullptr, p.obj});
    it = items_.emplace(key, Entry{std::move(p.obj), {}}).first;
    IndexLocked(it->first, it->second, p.index_values);
    return;
  }
  UnindexLocked(it->first, it->second);
  out.push_back({Delivery::kUpdate, key, it->second.obj, p.obj});
  it->second.obj = std::move(p.obj);
  IndexLocked(it->first, it->second, p.index_values);
}

void InformerCore::Remove(const std::string& key, std::vector<Delivery>& out) {
  auto it = items_.find(key);
  if (it == items_.end()) return;
  UnindexLocked(it->first, it->second);
  out.push_back({Delivery::kDelete, key, it->second.obj, nullptr});
  items_.erase(it);
}

void InformerCore::Apply(WatcherStep step) {
  if (step.error && options_.on_error) options_.on_error(*step.error);
  std::vector<Delivery> deliveries;
  bool trim_after_step = false;
  for (const WatcherEvent& ev : step.events) {
    switch (ev.type) {
      case WatcherEventType::kInit: {
        std::scoped_lock lock(mu_);
        relist_.clear();
        break;
      }
      case WatcherEventType::kInitApply: {
        std::string key;
        Projected p;
        if (!Project(ev.object, key, p)) break;
        std::scoped_lock lock(mu_);
        relist_[key] = std::move(p);
        break;
      }
      case WatcherEventType::kInitDone: {
        std::scoped_lock lock(mu_);
        std::vector<std::string> gone;
        for (const auto& [key, entry] : items_) {
          if (!relist_.count(key)) gone.push_back(key);
        }
        std::ranges::sort(gone);
        for (const std::string& key : gone) Remove(key, deliveries);
        const size_t first = deliveries.size();
        for (auto& [key, p] : relist_) Upsert(key, std::move(p), deliveries);
        relist_.clear();
        if (!synced_) {  // the first list: the cache fills
          for (size_t i = first; i < deliveries.size(); ++i) {
            if (deliveries[i].kind == Delivery::kAdd) deliveries[i].kind = Delivery::kInitialAdd;
          }
          deliveries.push_back({Delivery::kInitialListDone, "", nullptr, nullptr});
        }
        synced_ = true;
        synced_cv_.notify_all();
        trim_after_step = options_.trim_heap_after_list;
        break;
      }
      case WatcherEventType::kApply: {
        std::string key;
        Projected p;
        const bool keep = Project(ev.object, key, p);
        std::scoped_lock lock(mu_);
        if (keep) {
          Upsert(key, std::move(p), deliveries);
        } else {
          Remove(key, deliveries);
        }
        break;
      }
      case WatcherEventType::kDelete: {
        std::scoped_lock lock(mu_);
        Remove(ObjectKey(ev.object), deliveries);
        break;
      }
    }
  }
  Deliver(deliveries);
  if (trim_after_step) {
    step = WatcherStep();  // the last page's objects first
    base::TrimHeap();
  }
}

void InformerCore::Deliver(const std::vector<Delivery>& deliveries) {
  if (deliveries.empty() || handlers_.empty()) return;
  std::scoped_lock lock(deliver_mu_);
  for (const Delivery& d : deliveries) {
    for (const Handlers& h : handlers_) {
      switch (d.kind) {
        case Delivery::kAdd:
          if (h.on_add) h.on_add(d.key, d.new_obj);
          break;
        case Delivery::kUpdate:
          if (h.on_update) h.on_update(d.key, d.old_obj, d.new_obj);
          break;
        case Delivery::kDelete:
          if (h.on_delete) h.on_delete(d.key, d.old_obj);
          break;
        case Delivery::kInitialAdd:
          if (h.on_initial_add) {
            h.on_initial_add(d.key, d.new_obj);
          } else if (h.on_add) {
            h.on_add(d.key, d.new_obj);
          }
          break;
        case Delivery::kInitialListDone:
          if (h.on_initial_list_done) h.on_initial_list_done();
          break;
      }
    }
  }
}

void InformerCore::Resync() {
  std::vector<Delivery> deliveries;
  {
    std::scoped_lock lock(mu_);
    deliveries.reserve(items_.size());
    for (const auto& [key, entry] : items_) {
      deliveries.push_back({Delivery::kUpdate, key, entry.obj, entry.obj});
    }
  }
  Deliver(deliveries);
}

bool InformerCore::HasSynced() const {
  std::scoped_lock lock(mu_);
  return synced_;
}

// The timeout is a timer on the clock (a FakeClock's Advance ends the wait), not a timed wait
// on the condition variable.
bool InformerCore::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (synced_ || timeout <= std::chrono::milliseconds(0)) return synced_;
  bool timed_out = false;
  const base::TimerId timer = clock_.RunAfter(timeout, [this, &timed_out] {
    std::scoped_lock l(mu_);
    timed_out = true;
    synced_cv_.notify_all();
  });
  synced_cv_.wait(lock, [&] { return synced_ || timed_out; });
  // A timer that could not be cancelled is firing: its callback still writes timed_out.
  if (!clock_.Cancel(timer)) synced_cv_.wait(lock, [&] { return timed_out; });
  return synced_;
}

InformerCore::Erased InformerCore::Get(const std::string& key) const {
  std::scoped_lock lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second.obj;
}

std::vector<std::string> InformerCore::Keys() const {
  std::scoped_lock lock(mu_);
  std::vector<std::string> keys;
  keys.reserve(items_.size());
  for (const auto& [key, entry] : items_) keys.push_back(key);
  std::ranges::sort(keys);
  return keys;
}

std::vector<InformerCore::Erased> InformerCore::List() const {
  std::scoped_lock lock(mu_);
  std::vector<Erased> out;
  out.reserve(items_.size());
  for (const auto& [key, entry] : items_) out.push_back(entry.obj);
  return out;
}

std::vector<std::string> InformerCore::KeysByIndex(const std::string& index,
                                                   const std::string& value) const {
  std::scoped_lock lock(mu_);
  const int i = IndexNumber(index);
  if (i < 0) return {};
  auto it = indexes_[i].find(value);
  if (it == indexes_[i].end()) return {};
  std::vector<std::string> keys;
  keys.reserve(it->second.size());
  for (const std::string* key : it->second) keys.push_back(*key);
  std::ranges::sort(keys);
  return keys;
}

std::vector<InformerCore::Erased> InformerCore::ByIndex(const std::string& index,
                                                        const std::string& value) const {
  std::vector<Erased> out;
  for (const std::string& key : KeysByIndex(index, value)) {
    if (Erased obj = Get(key)) out.push_back(std::move(obj));
  }
  return out;
}

size_t InformerCore::Size() const {
  std::scoped_lock lock(mu_);
  return items_.size();
}

}  // namespace kmt::kube
