// kube/watcher.h — list-then-watch as an explicit state machine (after
// kube-rs's runtime::watcher).
//
//   kEmpty ──Step──▶ kInitListing ──(last page)──▶ kInitListed ──(watch opened)──▶ kWatching
//     ▲                  │ 410 (continue expired)        ▲  │ error: back off, retry    │
//     └──────────────────┘                               │  │                           │
//     ▲                                                  └──┼── stream ended / broken / │
//     └──────── 410 Gone (ERROR event or HTTP 410) ─────────┴── malformed / unknown type ┘
//
// Each Step() does at most one API call (one list page, opening a watch, or
// reading one watch event) and returns what it learned. BOOKMARKs only advance
// the resourceVersion. Failures are settled by kube::DispositionOf: kRelist
// (410) starts over from kEmpty, every other disposition retries the step that
// failed. Each state carries its own data (kube-rs's watcher::State): the page to
// list next, the resourceVersion to watch from, the open stream. Consecutive
// failures back off on the injected clock (kube/watcher_backoff.h: exponential,
// no shorter than a 429/5xx's Retry-After, capped at max_backoff); a success
// resets the backoff. Nothing here throws.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/json_filter.h"
#include "kube/client.h"
#include "kube/error.h"
#include "kube/watcher_backoff.h"

namespace kmt::kube {

struct WatcherConfig {
  Resource resource;
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  // Lists and watches leave metadata.managedFields out (informers never read it).
  bool omit_managed_fields = true;
  // Labels kept per object (ListOptions::max_label_bytes); 0 keeps them all.
  size_t max_label_bytes = 0;
  // The members kept of each object (ListOptions::reads); nullptr keeps them all. They must
  // include metadata.resourceVersion, which the watcher reads of every event (an informer's
  // do: kube::InformerReads). Not owned: it outlives the watcher.
  const base::ObjectReads* reads = nullptr;
  // Server-side timeoutSeconds per watch. It also bounds how long a stream that goes
  // silent without closing (a frozen proxy, a half-open connection) goes unnoticed:
  // the transport abandons a stream silent for watch_timeout + 30 s
  // (kube/rest_client.cc), and a healthy one never is (the server ends it at
  // watch_timeout, after a BOOKMARK ~2 s before, so it resumes without a relist).
  // 15 s keeps that within 45 s, as client-go's HTTP/2 health check does (30 s idle +
  // 15 s ping), at the cost of one re-watch per informer every 15 s.
  std::chrono::seconds watch_timeout{15};
  std::chrono::milliseconds initial_backoff{800};
  std::chrono::milliseconds max_backoff{30000};
};

enum class WatcherEventType {
  kInit,       // a (re)list starts: the consumer should prepare to replace its state
  kInitApply,  // an object of the list
  kInitDone,   // the list is complete: objects not applied since kInit are gone
  kApply,      // created or changed
  kDelete,     // deleted (object is its last state)
};

struct WatcherEvent {
  WatcherEventType type;
  Json object;  // null for kInit / kInitDone
};

struct WatcherStep {
  std::vector<WatcherEvent> events;
  std::optional<KubeError> error;  // what went wrong in this step (already handled)
};

class Watcher {
 public:
  // Which state the watcher is in (the index of its state below).
  enum class State { kEmpty, kInitListing, kInitListed, kWatching };
  // Backoffs wait on `clock` (Cancel() cuts them short).
  Watcher(KubeClient& client, WatcherConfig config, base::Clock& clock = base::SystemClock());

  WatcherStep Step();

  // Makes a blocked Step() return promptly; later Steps do nothing.
  // Thread-safe.
  void Cancel();
  bool cancelled() const;

  // Not thread-safe against Step().
  State state() const { return static_cast<State>(state_.index()); }
  // The resourceVersion the watch resumes from; "" before the first list is complete and
  // while relisting.
  const std::string& resource_version() const;
  int consecutive_failures() const { return backoff_.consecutive_failures(); }
  // The delay the next failure will wait.
  std::chrono::milliseconds NextBackoff() const { return backoff_.Next(); }

 private:
  // Nothing listed: the next step says kInit and starts the list.
  struct Empty {};
  // Listing page by page; `continue_token` is the next page's ("" = the first).
  struct InitListing {
    std::string continue_token;
  };
  // The list (or a watch) ended at `resource_version`: the next step opens a watch from it.
  struct InitListed {
    std::string resource_version;
  };
  // Reading `stream`, opened from `resource_version`, which each event and BOOKMARK
  // advances. `events_seen`: the stream said something (one that ends without a word
  // costs a backoff, so a server that closes every watch at once cannot make us spin).
  struct Watching {
    std::string resource_version;
    std::shared_ptr<WatchStream> stream;
    bool events_seen = false;
  };
  using States = std::variant<Empty, InitListing, InitListed, Watching>;
  static_assert(
      std::variant_size_v<States> == 4 &&
      std::is_same_v<std::variant_alternative_t<static_cast<size_t>(State::kWatching), States>,
                     Watching>);

  WatcherStep StepList(InitListing& listing);
  WatcherStep StepOpenWatch(InitListed& listed);
  WatcherStep StepWatch(Watching& watching);
  // Records `error` and owes a backoff; the next state is Empty on a 410, else `retry`.
  void Fail(WatcherStep& step, KubeError error, States retry);
  // Every change of state: under stream_mu_ (Cancel reads the open stream), and a stream
  // left behind is cancelled.
  void Become(States next);
  std::string What() const;

  KubeClient& client_;
  WatcherConfig config_;
  base::Clock& clock_;
  WatcherBackoff backoff_;
  // Changes alternative only in Become, under stream_mu_ (Cancel reads the open stream);
  // the stepping thread alone reads it otherwise or updates a state's own data.
  States state_;

  mutable std::mutex stream_mu_;       // guards state_'s changes and cancelled_ against Cancel()
  std::condition_variable cancel_cv_;  // Cancel() ends a backoff
  bool cancelled_ = false;
};

const char* WatcherStateName(Watcher::State state);

}  // namespace kmt::kube
