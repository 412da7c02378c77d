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
#include <string>

#include "controller/clock.h"
#include "controller/log.h"
#include "controller/reconcile.h"
#include "kube/client.h"

namespace kmt::controller {

inline constexpr const char* kEventSource = "migration-target-operator";

// The object an Event is about.
struct ObjectRef {
  std::string api_version, kind, ns, name, uid, resource_version;
};

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  virtual void Record(const ObjectRef& about, const EventSpec& event) = 0;
};

class KubeEventRecorder : public EventRecorder {
 public:
  // `instance` names this replica (reportingInstance, source.host).
  KubeEventRecorder(kube::KubeClient& client, const Clock& clock, Logger& log,
                    std::string instance);
  void Record(const ObjectRef& about, const EventSpec& event) override;

  // The Event object Record() creates (public for tests).
  nlohmann::json Build(const ObjectRef& about, const EventSpec& event);

 private:
  kube::KubeClient& client_;
  const Clock& clock_;
  Logger& log_;
  std::string instance_;
  std::atomic<uint64_t> seq_{0};
};

}  // namespace kmt::controller
