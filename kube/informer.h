// kube/informer.h — a list-then-watch cache of one resource + namespace +
// selector that keeps only a caller-chosen projection of each object.
//
// The cache is fed by a Watcher (kube/watcher.h) on its own thread. It keeps,
// per namespace/name key, a shared_ptr to the projection (never the whole
// object: the memory budget of DESIGN.md section 6 depends on it), maintains
// secondary indexes computed from the object when it arrives, calls handlers
// on add/update/delete (old and new projections), reports HasSynced() once
// the first list is complete, and re-delivers update events for every object
// on Resync() (periodically when resync_period > 0).
//
// The adds of the first list are the cache filling, not changes: a handler may take them
// apart (on_initial_add, client-go's isInInitialList) and learn when they are all delivered
// (on_initial_list_done), to act once on the whole list instead of once per object. Later
// lists (after a watch expired) deliver as the watch does.
//
// A projection returning nullptr means "not interesting": the object is
// treated as absent. Reads are thread-safe; handlers run on the informer's
// threads, one at a time, with no cache lock held (they may read the cache).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/json_filter.h"
#include "kube/client.h"
#include "kube/error.h"
#include "kube/watcher.h"

namespace kmt::kube {

struct InformerOptions {
  // Resource, namespace, selectors, paging, backoff. watch.reads: the members the projection
  // reads (next to it, in api/projections.h), or nullptr for whole objects; the informer
  // lists and watches with those and its own (InformerReads), and builds nothing else.
  WatcherConfig watch;
  std::chrono::milliseconds resync_period{0};  // 0 = no periodic resync; timed on the clock
  // Called (on the informer thread) with every error the watcher handled.
  std::function<void(const KubeError&)> on_error;
  // After each complete (re)list, hand the heap pages the list's pages were parsed into
  // back to the kernel (glibc malloc_trim): otherwise the allocator keeps the initial
  // LIST's high-water mark as resident memory for the life of the process.
  bool trim_heap_after_list = true;
};

// "namespace/name", or "name" for cluster-scoped objects (client-go's
// MetaNamespaceKeyFunc).
std::string ObjectKey(const Json& object);

// A projection's reads and what the informer reads of every object itself: ObjectKey's
// metadata.name and metadata.namespace, the watcher's metadata.resourceVersion. Index
// functions (AddIndex) read only what the projection reads.
base::ObjectReads InformerReads(const base::ObjectReads& projection);

// The type-erased core; use Informer<T> below.
class InformerCore {
 public:
  using Erased = std::shared_ptr<const void>;
  using Projection = std::function<Erased(const Json&)>;
  using IndexFunc = std::function<std::vector<std::string>(const Json&)>;
  struct Handlers {
    std::function<void(const std::string& key, const Erased& obj)> on_add;
    std::function<void(const std::string& key, const Erased& old_obj, const Erased& new_obj)>
        on_update;
    std::function<void(const std::string& key, const Erased& old_obj)> on_delete;
    // The first list's adds go here instead of on_add when set.
    std::function<void(const std::string& key, const Erased& obj)> on_initial_add = nullptr;
    // Once, after the first list's adds have been delivered.
    std::function<void()> on_initial_list_done = nullptr;
  };
  // The watcher's backoffs wait on `clock`, and the periodic resync is a timer on it (a
  // FakeClock's Advance makes it due); Stop() interrupts both.
  InformerCore(KubeClient& client, InformerOptions options, Projection projection,
               base::Clock& clock = base::SystemClock());
  ~InformerCore();
  InformerCore(const InformerCore&) = delete;
  InformerCore& operator=(const InformerCore&) = delete;

  // Register before Start().
  void AddHandlers(Handlers handlers);
  void AddIndex(const std::string& name, IndexFunc func);

  void Start();  // starts the watch thread (and the resync thread if configured)
  void Stop();   // cancels the watch, joins the threads; idempotent

  // Drives the watcher by one step on the calling thread (tests; do not mix
  // with Start()).
  void StepForTest();

  bool HasSynced() const;
  // Blocks until synced or the timeout passes on the clock (a FakeClock's: when the test
  // advances it); true if synced.
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  Erased Get(const std::string& key) const;
  std::vector<std::string> Keys() const;
  std::vector<Erased> List() const;
  std::vector<Erased> ByIndex(const std::string& index, const std::string& value) const;
  std::vector<std::string> KeysByIndex(const std::string& index, const std::string& value) const;
  size_t Size() const;

  // Calls on_update(key, obj, obj) for every cached object.
  void Resync();

 private:
  // What Project makes of an object: the projection and its values per index (in
  // index_funcs_ order).
  struct Projected {
    Erased obj;
    std::vector<std::vector<std::string>> index_values;
  };
  // A cached object and where it is indexed: (index number, the index's own copy of the
  // value), kept to unindex on change without a copy of each value.
  struct Entry {
    Erased obj;
    std::vector<std::pair<uint32_t, const std::string*>> indexed;
  };
  struct Delivery {
    enum { kAdd, kUpdate, kDelete, kInitialAdd, kInitialListDone } kind;
    std::string key;
    Erased old_obj;
    Erased new_obj;
  };

  void Apply(WatcherStep step);
  void Upsert(const std::string& key, Projected p, std::vector<Delivery>& out);
  void Remove(const std::string& key, std::vector<Delivery>& out);
  // `key` is the items_ key of `e`'s item (the index keeps its address).
  void IndexLocked(const std::string& key, Entry& e,
                   const std::vector<std::vector<std::string>>& values);
  void UnindexLocked(const std::string& key, Entry& e);
  bool Project(const Json& object, std::string& key, Projected& p);
  void Deliver(const std::vector<Delivery>& deliveries);
  void RunWatch();
  void RunResync();
  void ScheduleResyncLocked();  // stop_mu_ held

  KubeClient& client_;
  base::Clock& clock_;
  InformerOptions options_;
  std::optional<base::ObjectReads> reads_;  // InformerReads of options.watch.reads
  Projection projection_;
  std::unique_ptr<Watcher> watcher_;
  std::vector<Handlers> handlers_;
  std::vector<std::pair<std::string, IndexFunc>> index_funcs_;

  mutable std::mutex mu_;
  mutable std::condition_variable synced_cv_;
  std::unordered_map<std::string, Entry> items_;
  // Per index (index_funcs_ order): value -> keys. Vectors, not sets: a value
  // maps to a handful of keys, and per-node overhead is what a cache pays for. The keys
  // are items_' own (a node's key stays put until it is erased, and it is unindexed
  // first), not copies of them.
  std::vector<std::unordered_map<std::string, std::vector<const std::string*>>> indexes_;
  int IndexNumber(const std::string& name) const;
  bool synced_ = false;
  // Objects of a list in progress (between kInit and kInitDone).
  std::map<std::string, Projected> relist_;  // ordered: adds are delivered in key order

  std::mutex deliver_mu_;  // one handler call at a time

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool resync_due_ = false;                    // the timer fired; the resync thread has not run it
  std::optional<base::TimerId> resync_timer_;  // pending, or firing until its callback resets it
  std::thread watch_thread_;
  std::thread resync_thread_;
};

// The typed face of InformerCore: projections are std::shared_ptr<const T>.
template <typename T>
class Informer {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Projection = std::function<Ptr(const Json&)>;
  struct Handlers {
    std::function<void(const std::string& key, const Ptr& obj)> on_add;
    std::function<void(const std::string& key, const Ptr& old_obj, const Ptr& new_obj)> on_update;
    std::function<void(const std::string& key, const Ptr& old_obj)> on_delete;
    std::function<void(const std::string& key, const Ptr& obj)> on_initial_add = nullptr;
    std::function<void()> on_initial_list_done = nullptr;
  };

  Informer(KubeClient& client, InformerOptions options, Projection projection,
           base::Clock& clock = base::SystemClock())
      : core_(
            client, std::move(options),
            [p = std::move(projection)](const Json& j) -> InformerCore::Erased { return p(j); },
            clock) {}

  void AddHandlers(Handlers h) {
    InformerCore::Handlers erased;
    if (h.on_add) {
      erased.on_add = [f = h.on_add](const std::string& k, const InformerCore::Erased& o) {
        f(k, Cast(o));
      };
    }
    if (h.on_update) {
      erased.on_update = [f = h.on_update](const std::string& k, const InformerCore::Erased& o,
                                           const InformerCore::Erased& n) {
        f(k, Cast(o), Cast(n));
      };
    }
    if (h.on_delete) {
      erased.on_delete = [f = h.on_delete](const std::string& k, const InformerCore::Erased& o) {
        f(k, Cast(o));
      };
    }
    if (h.on_initial_add) {
      erased.on_initial_add = [f = h.on_initial_add](const std::string& k,
                                                     const InformerCore::Erased& o) {
        f(k, Cast(o));
      };
    }
    erased.on_initial_list_done = std::move(h.on_initial_list_done);
    core_.AddHandlers(std::move(erased));
  }
  void AddIndex(const std::string& name, InformerCore::IndexFunc f) {
    core_.AddIndex(name, std::move(f));
  }

  void Start() { core_.Start(); }
  void Stop() { core_.Stop(); }
  void StepForTest() { core_.StepForTest(); }
  void Resync() { core_.Resync(); }
  bool HasSynced() const { return core_.HasSynced(); }
  bool WaitForSync(std::chrono::milliseconds timeout) const { return core_.WaitForSync(timeout); }

  Ptr Get(const std::string& key) const { return Cast(core_.Get(key)); }
  std::vector<std::string> Keys() const { return core_.Keys(); }
  std::vector<Ptr> List() const { return CastAll(core_.List()); }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    return CastAll(core_.ByIndex(index, value));
  }
  std::vector<std::string> KeysByIndex(const std::string& index, const std::string& value) const {
    return core_.KeysByIndex(index, value);
  }
  size_t Size() const { return core_.Size(); }

 private:
  static Ptr Cast(const InformerCore::Erased& e) { return std::static_pointer_cast<const T>(e); }
  static std::vector<Ptr> CastAll(const std::vector<InformerCore::Erased>& v) {
    std::vector<Ptr> out;
    out.reserve(v.size());
    for (const auto& e : v) out.push_back(Cast(e));
    return out;
  }
  InformerCore core_;
};

}  // namespace kmt::kube
