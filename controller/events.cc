// controller/events.cc
#include "controller/events.h"

#include <fmt/format.h>

#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::controller {

KubeEventRecorder::KubeEventRecorder(kube::KubeClient& client, const Clock& clock, Logger& log,
                                     std::string instance)
    : client_(client), clock_(clock), log_(log), instance_(std::move(instance)) {}

nlohmann::json KubeEventRecorder::Build(const ObjectRef& about, const EventSpec& event) {
  const WallTime now = clock_.WallNow();
  const auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  // client-go names events "<name>.<unix nanos in hex>"; the sequence number
  // keeps two events of one reconcile (same clock reading) apart.
  const std::string name =
      fmt::format("{}.{:x}", about.name, static_cast<uint64_t>(nanos) + seq_.fetch_add(1));
  const std::string ts = FormatRfc3339(now);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", about.ns}}},
          {"involvedObject",
           {{"apiVersion", about.api_version},
            {"kind", about.kind},
            {"namespace", about.ns},
            {"name", about.name},
            {"uid", about.uid},
            {"resourceVersion", about.resource_version}}},
          {"type", event.type},
          {"reason", event.reason},
          {"message", event.message},
          {"source", {{"component", kEventSource}, {"host", instance_}}},
          {"reportingComponent", kEventSource},
          {"reportingInstance", instance_},
          {"count", 1},
          {"firstTimestamp", ts},
          {"lastTimestamp", ts}};
}

void KubeEventRecorder::Record(const ObjectRef& about, const EventSpec& event) {
  try {
    client_.Create(kube::kEvents, about.ns, Build(about, event));
    log_.Debug(
        "Recorded event",
        {{"vmim", about.ns + "/" + about.name}, {"reason", event.reason}, {"type", event.type}});
  } catch (const kube::KubeError& e) {
    log_.Error(
        "Failed to record event",
        {{"vmim", about.ns + "/" + about.name}, {"reason", event.reason}, {"error", e.what()}});
  }
}

}  // namespace kmt::controller
