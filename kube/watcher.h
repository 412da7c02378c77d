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
// failed. Consecutive failures back off exponentially through the injected
// sleep, and no shorter than a 429/5xx's Retry-After (capped at max_backoff);
// a success resets the backoff. Nothing here throws.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "kube/client.h"
#include "kube/error.h"

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
  enum class State { kEmpty, kInitListing, kInitListed, kWatching };
  // Backoffs wait on `clock` (Cancel() cuts them short).
  Watcher(KubeClient& client, WatcherConfig config, base::Clock& clock = base::SystemClock());

  WatcherStep Step();

  // Makes a blocked Step() return promptly; later Steps do nothing.
  // Thread-safe.
  void Cancel();
  bool cancelled() const;

  State state() const { return state_; }
  const std::string& resource_version() const { return resource_version_; }
  int consecutive_failures() const { return failures_; }
  // The delay the next failure will wait.
  std::chrono::milliseconds NextBackoff() const;

 private:
  WatcherStep StepList();
  WatcherStep StepOpenWatch();
  WatcherStep StepWatch();
  // Records `error`; the next state is kEmpty on a 410, else `retry_state`.
  void Fail(WatcherStep& step, KubeError error, State retry_state);
  void CloseStream();
  std::string What() const;

  KubeClient& client_;
  WatcherConfig config_;
  base::Clock& clock_;
  State state_ = State::kEmpty;
  std::string resource_version_;
  std::string continue_token_;
  int failures_ = 0;
  bool backoff_pending_ = false;
  std::optional<std::chrono::seconds> retry_after_;  // of the failure that set backoff_pending_
  bool events_on_stream_ = false;

  mutable std::mutex stream_mu_;       // guards stream_ and cancelled_ against Cancel()
  std::condition_variable cancel_cv_;  // Cancel() ends a backoff
  std::shared_ptr<WatchStream> stream_;
  bool cancelled_ = false;
};

const char* WatcherStateName(Watcher::State state);

}  // namespace kmt::kube
