// controller/events.h — Events on the VMIM, the seam through which the
// executor reports transitions to users (`kubectl describe vmim`).
//
// KubeEventRecorder creates core/v1 Event objects the way client-go's recorder
// does: name "<object>.<unique hex>", involvedObject the VMIM (apiVersion,
// kind, namespace, name, uid, resourceVersion), source component
// "migration-target-operator", count 1, firstTimestamp = lastTimestamp = now.
// The reconcile only emits Events on transitions, so there is nothing to
// aggregate. Recording is best effort: a failure is logged, never retried,
// and never fails the reconcile (client-go drops them too).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "base/log.h"
#include "controller/reconcile.h"
#include "kube/client.h"

namespace kmt::controller {

inline constexpr const char* kEventSource = "migration-target-operator";

// The object an Event is about.
struct ObjectRef {
  std::string api_version, kind, ns, name, uid, resource_version;
};

// The log fields of the reconcile that records an Event (vmim=ns/name reconcile_id=N), which
// the recorders' own lines about it carry; empty: vmim=ns/name of `about`.
using EventLogFields = std::vector<std::pair<std::string, std::string>>;

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  virtual void Record(const ObjectRef& about, const EventSpec& event,
                      const EventLogFields& log_fields = {}) = 0;
};

class KubeEventRecorder : public EventRecorder {
 public:
  // `instance` names this replica (reportingInstance, source.host).
  KubeEventRecorder(kube::KubeClient& client, const base::Clock& clock, base::Logger& log,
                    std::string instance);
  void Record(const ObjectRef& about, const EventSpec& event,
              const EventLogFields& log_fields = {}) override;

  // The Event object Record() creates (public for tests).
  nlohmann::json Build(const ObjectRef& about, const EventSpec& event);

 private:
  kube::KubeClient& client_;
  const base::Clock& clock_;
  base::Logger& log_;
  std::string instance_;
  std::atomic<uint64_t> seq_{0};
};

// Records through `sink` on its own thread, as client-go's event broadcaster does, so a
// reconcile never waits for an Event's API round trip. Record() never blocks: when
// `capacity` Events are already waiting, the new one is dropped and counted (client-go's
// queue holds 1,000 and drops the same way). Order is kept. Stop() (and the destructor)
// lets the queue drain for at most `drain_for` (on `clock`'s steady time), then drops what is
// left, logging how many.
class AsyncEventRecorder : public EventRecorder {
 public:
  AsyncEventRecorder(EventRecorder& sink, const base::Clock& clock, base::Logger& log,
                     size_t capacity = 1000,
                     std::chrono::milliseconds drain_for = std::chrono::seconds(5));
  ~AsyncEventRecorder() override;
  AsyncEventRecorder(const AsyncEventRecorder&) = delete;
  AsyncEventRecorder& operator=(const AsyncEventRecorder&) = delete;

  void Record(const ObjectRef& about, const EventSpec& event,
              const EventLogFields& log_fields = {}) override;
  void Stop();
  // Blocks until every Event recorded so far has been handed to the sink (tests).
  void Flush();
  uint64_t dropped() const { return dropped_.load(); }
  // Whether Stop() has begun: Events recorded from then on are dropped.
  bool stopping() const;

 private:
  void Run();

  EventRecorder& sink_;
  const base::Clock& clock_;
  base::Logger& log_;
  const size_t capacity_;
  const std::chrono::milliseconds drain_for_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // work or stop for the thread
  std::condition_variable idle_cv_;  // the queue emptied (Flush)
  struct Queued {
    ObjectRef about;
    EventSpec event;
    EventLogFields log_fields;
  };
  std::deque<Queued> queue_;
  bool busy_ = false;  // the thread is handing one Event to the sink
  bool stopping_ = false;
  std::atomic<uint64_t> dropped_{0};
  std::thread thread_;
};

}  // namespace kmt::controller
